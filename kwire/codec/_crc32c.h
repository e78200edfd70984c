/* CRC-32C (Castagnoli), the checksum of Kafka's record batch v2 (DefaultRecordBatch.computeChecksum).
 *
 * kw_crc32c(crc, data, len) continues a CRC-32C from `crc` (0 to start) over `len` bytes, like Java's
 * java.util.zip.CRC32C.update.  Three implementations, chosen once by kw_crc32c_init():
 *
 *   - x86_64: the SSE4.2 crc32 instruction, when the CPU has it (checked with cpuid at run time, so one
 *     binary runs on every x86_64);
 *   - aarch64: the ARMv8 CRC32 extension's crc32c instructions, when the compiler targets them or (Linux) the
 *     kernel reports them in the hwcaps;
 *   - anywhere else, or on a CPU without them: slicing-by-8 tables.
 *
 * The crc32 instruction takes 3 cycles and issues one per cycle, so one dependent chain runs at a third of the
 * instruction's throughput.  Large inputs are cut into three lanes computed side by side and joined by
 * shifting the first two lanes' CRCs over the bytes after them (a multiplication by x^(8n) modulo the
 * polynomial, as zlib's crc32_combine does).
 *
 * Every intrinsic sits behind a preprocessor check of the compiler and target, so this header compiles as plain
 * C99 (tables only) anywhere the checks fail.
 */
#ifndef KWIRE_CRC32C_H
#define KWIRE_CRC32C_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define KW_CRC32C_POLY 0x82F63B78u /* reflected Castagnoli polynomial */

static uint32_t kw_crc32c_table[8][256];
static int kw_crc32c_hw = 0;  /* 1 when a hardware path was selected */

/* --- portable: slicing-by-8 ------------------------------------------------------------------------------- */

static uint32_t kw_crc32c_sw(uint32_t crc, const unsigned char *p, size_t n) {
    while (n && ((uintptr_t)p & 7)) {
        crc = kw_crc32c_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
        n--;
    }
    while (n >= 8) {
        uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
        uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
        crc = kw_crc32c_table[7][lo & 0xff] ^ kw_crc32c_table[6][(lo >> 8) & 0xff] ^
              kw_crc32c_table[5][(lo >> 16) & 0xff] ^ kw_crc32c_table[4][lo >> 24] ^
              kw_crc32c_table[3][hi & 0xff] ^ kw_crc32c_table[2][(hi >> 8) & 0xff] ^
              kw_crc32c_table[1][(hi >> 16) & 0xff] ^ kw_crc32c_table[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n--) crc = kw_crc32c_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return crc;
}

/* --- joining lanes: multiplication modulo the polynomial (reflected bit order) ----------------------------- */

static uint32_t kw_crc32c_multmodp(uint32_t a, uint32_t b) {
    uint32_t m = 1u << 31, p = 0;
    for (;;) {
        if (a & m) {
            p ^= b;
            if ((a & (m - 1)) == 0) break;
        }
        m >>= 1;
        b = (b & 1) ? (b >> 1) ^ KW_CRC32C_POLY : b >> 1;
    }
    return p;
}

/* x^(8n) modulo the polynomial: the factor that moves a CRC over n zero bytes. */
static uint32_t kw_crc32c_x8n(size_t n) {
    uint32_t result = 1u << 31; /* x^0 */
    uint32_t square = 1u << 23; /* x^8 */
    while (n) {
        if (n & 1) result = kw_crc32c_multmodp(square, result);
        square = kw_crc32c_multmodp(square, square);
        n >>= 1;
    }
    return result;
}

#define KW_CRC32C_LANE 4096 /* bytes per lane: long enough that two joins per 12 KiB cost nothing */
static uint32_t kw_crc32c_shift_lane = 0, kw_crc32c_shift_2lanes = 0;

/* The body of a hardware path: ``STEP8(crc, byte)`` and ``STEP64(crc, uint64)`` are its instructions, on a
 * uint64_t register.  Bytes up to 8-byte alignment (for long runs only: both targets load unaligned words, and
 * each byte step costs a short run, such as a one-record batch, as much as a word), then three lanes side by side
 * while 3 lanes remain, then 8 bytes at a time, then the tail. */
#define KW_CRC32C_BODY(STEP8, STEP64)                                                                       \
    uint64_t c0 = crc;                                                                                      \
    while (n >= 256 && ((uintptr_t)p & 7)) {                                                                \
        c0 = STEP8(c0, *p++);                                                                               \
        n--;                                                                                                \
    }                                                                                                       \
    while (n >= 3 * KW_CRC32C_LANE) {                                                                       \
        uint64_t c1 = 0, c2 = 0;                                                                            \
        const unsigned char *end = p + KW_CRC32C_LANE;                                                      \
        do {                                                                                                \
            uint64_t v0, v1, v2;                                                                            \
            memcpy(&v0, p, 8);                                                                              \
            memcpy(&v1, p + KW_CRC32C_LANE, 8);                                                             \
            memcpy(&v2, p + 2 * KW_CRC32C_LANE, 8);                                                         \
            c0 = STEP64(c0, v0);                                                                            \
            c1 = STEP64(c1, v1);                                                                            \
            c2 = STEP64(c2, v2);                                                                            \
            p += 8;                                                                                         \
        } while (p < end);                                                                                  \
        c0 = kw_crc32c_multmodp(kw_crc32c_shift_2lanes, (uint32_t)c0) ^                                     \
             kw_crc32c_multmodp(kw_crc32c_shift_lane, (uint32_t)c1) ^ (uint32_t)c2;                         \
        p += 2 * KW_CRC32C_LANE;                                                                            \
        n -= 3 * KW_CRC32C_LANE;                                                                            \
    }                                                                                                       \
    while (n >= 8) {                                                                                        \
        uint64_t v;                                                                                         \
        memcpy(&v, p, 8);                                                                                   \
        c0 = STEP64(c0, v);                                                                                 \
        p += 8;                                                                                             \
        n -= 8;                                                                                             \
    }                                                                                                       \
    while (n--) c0 = STEP8(c0, *p++);                                                                       \
    return (uint32_t)c0;

/* --- x86_64: SSE4.2 ------------------------------------------------------------------------------------ */

#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__) || defined(_MSC_VER))
#define KW_CRC32C_X86 1
#include <nmmintrin.h>
#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
#define KW_TARGET_SSE42
static int kw_cpu_has_sse42(void) {
    int info[4];
    __cpuid(info, 1);
    return (info[2] >> 20) & 1;
}
#else
#include <cpuid.h>
#define KW_TARGET_SSE42 __attribute__((target("sse4.2")))
static int kw_cpu_has_sse42(void) {
    unsigned int a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    return (c >> 20) & 1;
}
#endif

#define KW_X86_STEP8(c, b) _mm_crc32_u8((uint32_t)(c), (b))
#define KW_X86_STEP64(c, v) _mm_crc32_u64((c), (v))
KW_TARGET_SSE42 static uint32_t kw_crc32c_x86(uint32_t crc, const unsigned char *p, size_t n) {
    KW_CRC32C_BODY(KW_X86_STEP8, KW_X86_STEP64)
}
#endif

/* --- aarch64: the CRC32 extension ---------------------------------------------------------------------- */

#if defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__)) && \
    (defined(__ARM_FEATURE_CRC32) || defined(__linux__))
#define KW_CRC32C_ARM 1
#if defined(__ARM_FEATURE_CRC32)
/* The compiler targets the extension (Apple silicon, -march=armv8.1-a and later): no check needed. */
static int kw_cpu_has_crc32(void) { return 1; }
#else
#include <sys/auxv.h>
#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1 << 7)
#endif
static int kw_cpu_has_crc32(void) { return (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0; }
#endif
/* Written as assembly with the extension enabled for these instructions only, so the rest of the module stays
 * plain ARMv8.0 and the build needs no -march flag. */
static inline uint32_t kw_crc32cx(uint32_t crc, uint64_t v) {
    __asm__(".arch_extension crc\n\tcrc32cx %w0, %w0, %x1" : "+r"(crc) : "r"(v));
    return crc;
}
static inline uint32_t kw_crc32cb(uint32_t crc, uint32_t v) {
    __asm__(".arch_extension crc\n\tcrc32cb %w0, %w0, %w1" : "+r"(crc) : "r"(v));
    return crc;
}

#define KW_ARM_STEP8(c, b) kw_crc32cb((uint32_t)(c), (b))
#define KW_ARM_STEP64(c, v) kw_crc32cx((uint32_t)(c), (v))
static uint32_t kw_crc32c_arm(uint32_t crc, const unsigned char *p, size_t n) {
    KW_CRC32C_BODY(KW_ARM_STEP8, KW_ARM_STEP64)
}
#endif

/* --- selection --------------------------------------------------------------------------------------- */

static uint32_t (*kw_crc32c_impl)(uint32_t, const unsigned char *, size_t) = kw_crc32c_sw;

/* Fills the tables and picks the implementation; idempotent.  Called once when the module loads. */
static void kw_crc32c_init(void) {
    uint32_t i, j;
    for (i = 0; i < 256; i++) {
        uint32_t c = i;
        for (j = 0; j < 8; j++) c = (c & 1) ? (c >> 1) ^ KW_CRC32C_POLY : c >> 1;
        kw_crc32c_table[0][i] = c;
    }
    for (i = 0; i < 256; i++)
        for (j = 1; j < 8; j++)
            kw_crc32c_table[j][i] = (kw_crc32c_table[j - 1][i] >> 8) ^ kw_crc32c_table[0][kw_crc32c_table[j - 1][i] & 0xff];
    kw_crc32c_shift_lane = kw_crc32c_x8n(KW_CRC32C_LANE);
    kw_crc32c_shift_2lanes = kw_crc32c_x8n(2 * KW_CRC32C_LANE);
#if defined(KW_CRC32C_X86)
    if (kw_cpu_has_sse42()) { kw_crc32c_impl = kw_crc32c_x86; kw_crc32c_hw = 1; }
#elif defined(KW_CRC32C_ARM)
    if (kw_cpu_has_crc32()) { kw_crc32c_impl = kw_crc32c_arm; kw_crc32c_hw = 1; }
#endif
}

/* Java's CRC32C.update: the register is kept inverted between calls. */
static inline uint32_t kw_crc32c(uint32_t crc, const unsigned char *p, size_t n) {
    return ~kw_crc32c_impl(~crc, p, n);
}

/* Force the portable tables (tests compare them with the hardware path); 0 restores the selection. */
static void kw_crc32c_force_portable(int on) {
    kw_crc32c_impl = kw_crc32c_sw;
    kw_crc32c_hw = 0;
    if (!on) kw_crc32c_init();
}

#endif /* KWIRE_CRC32C_H */
