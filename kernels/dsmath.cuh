// Elementary functions with the same bits as distsim/rng/dsmath.py (compile with --fmad=false):
// only exactly rounded operations in a fixed order.
#pragma once

#define DS_LN2 0.6931471805599453
#define DS_SQRT_HALF 0.7071067811865476
#define DS_INV_LN2 1.4426950408889634
#define DS_LN2_HI 6.93147180369123816490e-01
#define DS_LN2_LO 1.90821492927058770002e-10

__device__ __forceinline__ double ds_frexp(double x, int* e) {
    const long long b = __double_as_longlong(x);
    const long long ex = (b >> 52) & 0x7FF;
    if (ex == 0 || ex == 0x7FF || b < 0) return frexp(x, e);
    *e = (int)(ex - 1022);
    return __longlong_as_double((b & (long long)0x800FFFFFFFFFFFFFULL) | 0x3FE0000000000000LL);
}

__device__ __forceinline__ double ds_log(double x) {
    int e;
    double m = ds_frexp(x, &e);
    if (m < DS_SQRT_HALF) { m = m * 2.0; e = e - 1; }
    const double s = (m - 1.0) / (m + 1.0);
    const double z = s * s;
    double p = 1.0 / 23.0;
    p = p * z + 1.0 / 21.0;
    p = p * z + 1.0 / 19.0;
    p = p * z + 1.0 / 17.0;
    p = p * z + 1.0 / 15.0;
    p = p * z + 1.0 / 13.0;
    p = p * z + 1.0 / 11.0;
    p = p * z + 1.0 / 9.0;
    p = p * z + 1.0 / 7.0;
    p = p * z + 1.0 / 5.0;
    p = p * z + 1.0 / 3.0;
    p = p * z + 1.0;
    return 2.0 * s * p + (double)e * DS_LN2;
}

__device__ __forceinline__ double ds_exp(double x) {
    if (x > 709.0) return __longlong_as_double(0x7ff0000000000000LL);
    if (x < -745.0) return 0.0;
    const double k = floor(x * DS_INV_LN2 + 0.5);
    const double r = (x - k * DS_LN2_HI) - k * DS_LN2_LO;
    double p = 1.0 / 6227020800.0;
    p = p * r + 1.0 / 479001600.0;
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    return ldexp(p, (int)k);
}

__device__ __forceinline__ double ds_pow(double x, double y) {
    if (y == floor(y) && fabs(y) <= 64.0) {
        long long n = (long long)fabs(y);
        double result = 1.0, base = x;
        while (n > 0) {
            if (n & 1) result = result * base;
            base = base * base;
            n >>= 1;
        }
        return y < 0 ? 1.0 / result : result;
    }
    if (x <= 0.0) return (x == 0.0 && y > 0) ? 0.0 : __longlong_as_double(0x7ff8000000000000LL);
    return ds_exp(y * ds_log(x));
}

// sin/cos: the twins of distsim/backends/dsmath.py ds_sin/ds_cos (x = k pi/2 + r, explicit FMAs, fdlibm's
// kernel polynomials, quadrant k mod 4; NaN for |x| > 1e9 or not finite)
__device__ __forceinline__ double ds_sin_kernel(const double r) {
    const double z = r * r;
    double p = fma(z, 1.58969099521155010221e-10, -2.50507602534068634195e-08);
    p = fma(z, p, 2.75573137070700676789e-06);
    p = fma(z, p, -1.98412698298579493134e-04);
    p = fma(z, p, 8.33333333332248946124e-03);
    p = fma(z, p, -1.66666666666666324348e-01);
    return fma(r * z, p, r);
}

__device__ __forceinline__ double ds_cos_kernel(const double r) {
    const double z = r * r;
    double p = fma(z, -1.13596475577881948265e-11, 2.08757232129817482790e-09);
    p = fma(z, p, -2.75573143513906633035e-07);
    p = fma(z, p, 2.48015872894767294178e-05);
    p = fma(z, p, -1.38888888888741095749e-03);
    p = fma(z, p, 4.16666666666666019037e-02);
    return fma(z * z, p, fma(-0.5, z, 1.0));
}

__device__ __forceinline__ double ds_trig(const double x, const int shift) {
    if (!(fabs(x) <= 1.0e9)) return __longlong_as_double(0x7ff8000000000000LL);
    const double k = floor(x * 0.6366197723675814 + 0.5);
    double r = fma(-k, 1.5707963267948966, x);
    r = fma(-k, 6.123233995736766e-17, r);
    r = fma(-k, -1.4973849048591698e-33, r);
    const long long q = ((long long)k + shift) & 3;
    if (q == 0) return ds_sin_kernel(r);
    if (q == 1) return ds_cos_kernel(r);
    if (q == 2) return -ds_sin_kernel(r);
    return -ds_cos_kernel(r);
}

__device__ __forceinline__ double ds_sin(const double x) { return ds_trig(x, 0); }
__device__ __forceinline__ double ds_cos(const double x) { return ds_trig(x, 1); }

// -log(u) for a normal double u in (0, 1), the same bits as distsim/rng/dsmath.py neglog_u01: u = m 2^k
// with m in [0.75, 1.5), c = j/256 the table point nearest m, log m = log c + log1p(r) with |r| <= 1/384
// (series to r^6). `tab` holds (1/c, log c) for j = 192..384, from DS_NEGLOG_TABLE_INIT (ds_neglog_load).
__constant__ double ds_neglog_coef[6] = {-0.16666666666666666, 0.2, -0.25, 0.3333333333333333, -0.5, DS_LN2};
__device__ __forceinline__ double ds_neglog_u01(double u, const double2* __restrict__ tab) {
    const int hi = __double2hiint(u);
    const int top = (hi >> 19) & 1;
    const int k = ((hi >> 20) & 0x7FF) - 1023 + top;
    const double m = __hiloint2double((hi & 0x000FFFFF) | ((1023 - top) << 20), __double2loint(u));
    const int j = (int)(m * 256.0 + 0.5);
    const double2 t = tab[j - 192];
    const double r = (m - (double)j * 0.00390625) * t.x;
    // explicit fma() (kept under --fmad=false; llvm.fma on the CPU); constants from the constant bank
    double q = fma(ds_neglog_coef[0], r, ds_neglog_coef[1]);
    q = fma(q, r, ds_neglog_coef[2]);
    q = fma(q, r, ds_neglog_coef[3]);
    q = fma(q, r, ds_neglog_coef[4]);
    const double lg = fma(r * r, q, r);
    return -(fma((double)k, ds_neglog_coef[5], t.y) + lg);
}

#define DS_NEGLOG_ENTRIES 193
#ifndef DS_NEGLOG_TABLE_INIT  // the host prepends the table (distsim/rng/dsmath.py neglog_table_cuda)
#define DS_NEGLOG_TABLE_MISSING
#define DS_NEGLOG_TABLE_INIT {0.0}
#endif
__constant__ double ds_neglog_table[2 * DS_NEGLOG_ENTRIES] = DS_NEGLOG_TABLE_INIT;
// Copy the table into shared memory (every thread of the block calls this, then __syncthreads()).
__device__ __forceinline__ void ds_neglog_load(double2* sh) {
#ifdef DS_NEGLOG_TABLE_MISSING
    __trap();
#endif
    for (int i = threadIdx.x; i < DS_NEGLOG_ENTRIES; i += blockDim.x)
        sh[i] = make_double2(ds_neglog_table[2 * i], ds_neglog_table[2 * i + 1]);
}
