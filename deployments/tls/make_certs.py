"""Make a private CA and one certificate/key pair per role (scheduler, worker, client) for a Dask cluster's TLS.

    python deployments/tls/make_certs.py --out certs/ [--host head.example.org --host 10.0.0.5] [--days 365]

Writes ``ca.pem`` (the CA certificate: every scheduler, worker and client needs it), ``ca-key.pem``
(the CA key: it can sign new certificates, keep it off the cluster) and, for each role,
``ROLE.pem`` + ``ROLE-key.pem`` signed by the CA: ``scheduler`` (the head node only), ``worker``
(the worker nodes), ``client`` (the machines that submit work). Keys are mode 0600.

Dask's mutual TLS accepts a peer whose certificate is signed by the CA; it does not check host
names or roles. TLS itself checks the extended key usage: the scheduler and worker certificates
may serve and connect, the client certificate may only connect. The names given with ``--host``
(plus localhost and 127.0.0.1) go into the scheduler and worker certificates' subject alternative
names (used by browsers when a dashboard is served over HTTPS). Needs the ``cryptography`` package.
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

SERVER_AND_CLIENT = [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
# role -> extended key usages: the scheduler and workers listen and connect; a client only connects
ROLES = {"scheduler": SERVER_AND_CLIENT, "worker": SERVER_AND_CLIENT, "client": [ExtendedKeyUsageOID.CLIENT_AUTH]}


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "distsim"), x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    os.chmod(path, 0o600)


def make_certs(out: str | os.PathLike, hosts: list[str] | tuple[str, ...] = (), days: int = 365) -> dict[str, Path]:
    """Create the CA and the scheduler, worker and client certificates in ``out``.

    Returns their paths: ``ca``, ``ca_key`` and ``ROLE_cert``, ``ROLE_key`` for each role (the
    names of ``distributed.security.Security``'s ``tls_ROLE_cert``/``tls_ROLE_key`` arguments).
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    now = dt.datetime.now(dt.timezone.utc)

    def builder(subject: str, issuer: x509.Name, public_key) -> x509.CertificateBuilder:
        return (x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(issuer).public_key(public_key)
                .serial_number(x509.random_serial_number())
                .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=days)))

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (builder("distsim dask CA", _name("distsim dask CA"), ca_key.public_key())
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

    paths = {"ca": out / "ca.pem", "ca_key": out / "ca-key.pem"}
    paths["ca"].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    _write_key(ca_key, paths["ca_key"])
    for role, usages in ROLES.items():
        key = ec.generate_private_key(ec.SECP256R1())
        cert = builder(f"distsim dask {role}", ca.subject, key.public_key())
        if ExtendedKeyUsageOID.SERVER_AUTH in usages:
            cert = cert.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = (cert.add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
                .sign(ca_key, hashes.SHA256()))
        paths[f"{role}_cert"] = out / f"{role}.pem"
        paths[f"{role}_key"] = out / f"{role}-key.pem"
        paths[f"{role}_cert"].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        _write_key(key, paths[f"{role}_key"])
    return paths


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="folder for the PEM files")
    ap.add_argument("--host", action="append", default=[], help="host name or IP of the scheduler (repeatable)")
    ap.add_argument("--days", type=int, default=365)
    args = ap.parse_args()
    for role, path in make_certs(args.out, args.host, args.days).items():
        print(f"{role:14s} {path}")


if __name__ == "__main__":
    main()
