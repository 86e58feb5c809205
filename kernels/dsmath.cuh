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
