"""Make a private CA and one certificate/key pair for a Dask cluster's TLS (scheduler, workers, client).

    python deployments/tls/make_certs.py --out certs/ [--host head.example.org --host 10.0.0.5] [--days 365]

Writes ``ca.pem`` (the CA certificate: give it to every scheduler, worker and client),
``ca-key.pem`` (the CA key: keep it off the cluster), ``node.pem`` and ``node-key.pem`` (certificate
and key signed by the CA, used by the scheduler, the workers and the client; mode 0600). Dask
checks that the peer's certificate is signed by the CA (mutual TLS); the names given with
``--host`` (plus localhost and 127.0.0.1) go into the certificate's subject alternative names.
Needs the ``cryptography`` package.
"""

from __future__ import annotations

import argparse
import datetime as dt
import ipaddress
import os
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "distsim"), x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    os.chmod(path, 0o600)


def make_certs(out: str | os.PathLike, hosts: list[str] | tuple[str, ...] = (), days: int = 365) -> dict[str, Path]:
    """Create the CA and the node certificate in ``out``; returns their paths by role."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    now = dt.datetime.now(dt.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(_name("distsim dask CA")).issuer_name(_name("distsim dask CA"))
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=days))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                                       key_encipherment=False, data_encipherment=False, key_agreement=False,
                                       encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    sans: list[x509.GeneralName] = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    for h in hosts:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(h)))
        except ValueError:
            sans.append(x509.DNSName(h))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(_name("distsim dask node")).issuer_name(ca.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=days))
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    paths = {"ca": out / "ca.pem", "ca_key": out / "ca-key.pem", "cert": out / "node.pem", "key": out / "node-key.pem"}
    paths["ca"].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    _write_key(ca_key, paths["ca_key"])
    paths["cert"].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_key(key, paths["key"])
    return paths


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="folder for the PEM files")
    ap.add_argument("--host", action="append", default=[], help="host name or IP of the scheduler (repeatable)")
    ap.add_argument("--days", type=int, default=365)
    args = ap.parse_args()
    for role, path in make_certs(args.out, args.host, args.days).items():
        print(f"{role:7s} {path}")


if __name__ == "__main__":
    main()
