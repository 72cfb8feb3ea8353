/* The vector index's two loops over rows, compiled (memory.embeddings.index uses numpy where
 * this module was not built: the same rows, the same scores up to float rounding).
 *
 * nearest_rows: every row's Hamming distance to the query's sign bits, raised to the row's floor,
 * and the `count` rows of smallest distance, in one pass over the sign bits and one over the
 * distances (numpy takes a pass per word, then the floor, then a sample, a count and a select;
 * both count only the rows near enough, as a sample of the distances shows).
 * scores: the dot product of each chosen row's int8 codes with the float query, times its scale
 * (numpy gathers the rows, converts them to float and calls BLAS on the copy).
 *
 * The popcount runs on AVX-512 VPOPCNTDQ where the processor has it, else on AVX2 (a nibble
 * lookup), else on POPCNT, else in plain C: chosen once, when the module is loaded, so one build
 * runs on any x86-64 (use_popcount picks another, for tests).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define KERNELS_X86 1
#include <immintrin.h>
#endif

/* Distances below this (sign bits of up to 4,096 dimensions) are counted on the stack. */
#define MAX_VALUES 4097

typedef void (*distances_fn)(const uint64_t *signs, Py_ssize_t stride, Py_ssize_t words,
                             Py_ssize_t rows, const uint64_t *query, const uint16_t *floor,
                             uint16_t *distance);

/* One word of every row at a time (the sign bits are stored word-major), then the floor. */
#define DISTANCES_BODY                                                                          \
    memset(distance, 0, (size_t)rows * sizeof(uint16_t));                                        \
    for (Py_ssize_t w = 0; w < words; w++) {                                                     \
        const uint64_t *word = signs + w * stride;                                               \
        const uint64_t q = query[w];                                                             \
        for (Py_ssize_t r = 0; r < rows; r++)                                                    \
            distance[r] += (uint16_t)__builtin_popcountll(word[r] ^ q);                         \
    }                                                                                            \
    for (Py_ssize_t r = 0; r < rows; r++)                                                        \
        if (distance[r] < floor[r])                                                              \
            distance[r] = floor[r];

static void
distances_plain(const uint64_t *signs, Py_ssize_t stride, Py_ssize_t words, Py_ssize_t rows,
                const uint64_t *query, const uint16_t *floor, uint16_t *distance)
{
    DISTANCES_BODY
}

#ifdef KERNELS_X86
__attribute__((target("popcnt"))) static void
distances_popcnt(const uint64_t *signs, Py_ssize_t stride, Py_ssize_t words, Py_ssize_t rows,
                 const uint64_t *query, const uint16_t *floor, uint16_t *distance)
{
    DISTANCES_BODY
}

/* Rows `from` to `rows` one at a time, every word of a row before the next: the rows left over
 * by the loops below, which take them many at a time. */
static inline void
distances_rest(const uint64_t *signs, Py_ssize_t stride, Py_ssize_t words, Py_ssize_t from,
               Py_ssize_t rows, const uint64_t *query, const uint16_t *floor, uint16_t *distance)
{
    for (Py_ssize_t r = from; r < rows; r++) {
        uint16_t d = 0;
        for (Py_ssize_t w = 0; w < words; w++)
            d += (uint16_t)__builtin_popcountll(signs[w * stride + r] ^ query[w]);
        distance[r] = d < floor[r] ? floor[r] : d;
    }
}

/* AVX2 has no popcount of its own: each byte's bits are looked up by nibble (vpshufb), a row's
 * byte counts summed over its words (at most 8 a word: 31 words fit in a byte) and then per
 * 64-bit lane (vpsadbw). Four rows a register, sixteen a step, every word of them before the
 * next: the distances are written once, not added to once a word as the loops above do. */
#define ROWS_A_STEP 16
#define WORDS_A_BYTE 31

__attribute__((target("avx2,popcnt"))) static void
distances_avx2(const uint64_t *signs, Py_ssize_t stride, Py_ssize_t words, Py_ssize_t rows,
               const uint64_t *query, const uint16_t *floor, uint16_t *distance)
{
    const __m256i nibble_bits = _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0,
                                                 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4);
    const __m256i low = _mm256_set1_epi8(0x0f);
    const __m256i zero = _mm256_setzero_si256();
    Py_ssize_t r = 0;
    for (; r + ROWS_A_STEP <= rows; r += ROWS_A_STEP) {
        __m256i total[4] = {zero, zero, zero, zero};
        __m256i bytes[4] = {zero, zero, zero, zero};
        for (Py_ssize_t w = 0; w < words; w++) {
            const __m256i q = _mm256_set1_epi64x((long long)query[w]);
            const uint64_t *word = signs + w * stride + r;
            for (int v = 0; v < 4; v++) {
                __m256i x = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(word + 4 * v)), q);
                __m256i lo = _mm256_shuffle_epi8(nibble_bits, _mm256_and_si256(x, low));
                __m256i hi = _mm256_shuffle_epi8(nibble_bits,
                                                 _mm256_and_si256(_mm256_srli_epi16(x, 4), low));
                bytes[v] = _mm256_add_epi8(bytes[v], _mm256_add_epi8(lo, hi));
            }
            if (w % WORDS_A_BYTE == WORDS_A_BYTE - 1)
                for (int v = 0; v < 4; v++) {
                    total[v] = _mm256_add_epi64(total[v], _mm256_sad_epu8(bytes[v], zero));
                    bytes[v] = zero;
                }
        }
        uint64_t counts[ROWS_A_STEP];
        for (int v = 0; v < 4; v++)
            _mm256_storeu_si256((__m256i *)(counts + 4 * v),
                                _mm256_add_epi64(total[v], _mm256_sad_epu8(bytes[v], zero)));
        for (int j = 0; j < ROWS_A_STEP; j++) {
            uint16_t d = (uint16_t)counts[j];
            distance[r + j] = d < floor[r + j] ? floor[r + j] : d;
        }
    }
    distances_rest(signs, stride, words, r, rows, query, floor, distance);
}

/* AVX-512 counts the bits of eight words at once (vpopcntq): a row's count stays in its 64-bit
 * lane over all its words, 32 rows a step, and is narrowed, raised to the floor and written once. */
#define ROWS_A_ZMM_STEP 32

__attribute__((target("avx512f,avx512bw,avx512vl,avx512vpopcntdq,popcnt"))) static void
distances_avx512(const uint64_t *signs, Py_ssize_t stride, Py_ssize_t words, Py_ssize_t rows,
                 const uint64_t *query, const uint16_t *floor, uint16_t *distance)
{
    Py_ssize_t r = 0;
    for (; r + ROWS_A_ZMM_STEP <= rows; r += ROWS_A_ZMM_STEP) {
        __m512i total[4] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(),
                            _mm512_setzero_si512()};
        for (Py_ssize_t w = 0; w < words; w++) {
            const __m512i q = _mm512_set1_epi64((long long)query[w]);
            const uint64_t *word = signs + w * stride + r;
            for (int v = 0; v < 4; v++)
                total[v] = _mm512_add_epi64(
                    total[v],
                    _mm512_popcnt_epi64(_mm512_xor_si512(_mm512_loadu_si512(word + 8 * v), q)));
        }
        for (int v = 0; v < 4; v++) {
            __m128i least = _mm_loadu_si128((const __m128i *)(floor + r + 8 * v));
            _mm_storeu_si128((__m128i *)(distance + r + 8 * v),
                             _mm_max_epu16(_mm512_cvtepi64_epi16(total[v]), least));
        }
    }
    distances_rest(signs, stride, words, r, rows, query, floor, distance);
}
#endif

typedef void (*dots_fn)(const int8_t *codes, Py_ssize_t stride, Py_ssize_t dimensions,
                        const int64_t *rows, Py_ssize_t n, const float *query, const float *scales,
                        float *out);

/* LANES partial sums per row, so that the compiler may keep them in one vector register (a
 * single running sum is a chain of dependent additions it may not reorder). */
#define LANES 16
/* The rows are scattered over the codes (38 MB at 100,000 rows): the one AHEAD rows on is asked
 * of memory while this one is scored, or each row's lines would be waited for in turn. */
#define AHEAD 16
#define DOTS_BODY                                                                                \
    for (Py_ssize_t i = 0; i < n; i++) {                                                         \
        if (i + AHEAD < n) {                                                                     \
            const char *next = (const char *)(codes + rows[i + AHEAD] * stride);                 \
            for (Py_ssize_t line = 0; line < dimensions; line += 64)                             \
                __builtin_prefetch(next + line);                                                 \
        }                                                                                        \
        const int8_t *code = codes + rows[i] * stride;                                           \
        float lane[LANES] = {0};                                                                 \
        Py_ssize_t k = 0;                                                                        \
        for (; k + LANES <= dimensions; k += LANES)                                              \
            for (int j = 0; j < LANES; j++)                                                      \
                lane[j] += (float)code[k + j] * query[k + j];                                    \
        float sum = 0.0f;                                                                        \
        for (; k < dimensions; k++)                                                              \
            sum += (float)code[k] * query[k];                                                    \
        for (int j = 0; j < LANES; j++)                                                          \
            sum += lane[j];                                                                      \
        out[i] = sum * scales[rows[i]];                                                          \
    }

static void
dots_plain(const int8_t *codes, Py_ssize_t stride, Py_ssize_t dimensions, const int64_t *rows,
           Py_ssize_t n, const float *query, const float *scales, float *out)
{
    DOTS_BODY
}

#ifdef KERNELS_X86
__attribute__((target("avx2,fma"))) static void
dots_avx2(const int8_t *codes, Py_ssize_t stride, Py_ssize_t dimensions, const int64_t *rows,
          Py_ssize_t n, const float *query, const float *scales, float *out)
{
    DOTS_BODY
}

__attribute__((target("avx512f,avx512bw,avx512vl"))) static void
dots_avx512(const int8_t *codes, Py_ssize_t stride, Py_ssize_t dimensions, const int64_t *rows,
            Py_ssize_t n, const float *query, const float *scales, float *out)
{
    DOTS_BODY
}
#endif

/* The sign-bit distance loops, fastest first: the first this processor runs is used. */
static struct {
    const char *name;
    distances_fn run;
    int supported;
} loops[] = {
#ifdef KERNELS_X86
    {"avx512vpopcntdq", distances_avx512, 0},
    {"avx2", distances_avx2, 0},
    {"popcnt", distances_popcnt, 0},
#endif
    {"plain", distances_plain, 1},
};
#define LOOPS ((int)(sizeof(loops) / sizeof(loops[0])))

/* The loop nearest_rows runs: the first supported, unless use_popcount chose another. */
static int in_use = LOOPS - 1;
static dots_fn dots = dots_plain;

static void
choose_loops(void)
{
#ifdef KERNELS_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")
        && __builtin_cpu_supports("avx512vl"))
        dots = dots_avx512;
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        dots = dots_avx2;
    loops[0].supported = __builtin_cpu_supports("avx512vpopcntdq") && __builtin_cpu_supports("avx512bw")
                         && __builtin_cpu_supports("avx512vl");
    loops[1].supported = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt");
    loops[2].supported = __builtin_cpu_supports("popcnt");
#endif
    for (int i = LOOPS - 1; i >= 0; i--)
        if (loops[i].supported)
            in_use = i;
}

/* A buffer of `format` items in one dimension (or two, for the sign bits: see nearest_rows). */
static int
check(Py_buffer *view, const char *name, Py_ssize_t itemsize, int ndim)
{
    if (view->ndim != ndim || view->itemsize != itemsize) {
        PyErr_Format(PyExc_ValueError, "%s: expected %d dimension(s) of %zd-byte items", name, ndim,
                     itemsize);
        return -1;
    }
    if (view->strides[ndim - 1] != itemsize) {
        PyErr_Format(PyExc_ValueError, "%s: its rows must be contiguous", name);
        return -1;
    }
    return 0;
}

static int
get(PyObject *object, Py_buffer *view, const char *name, Py_ssize_t itemsize, int ndim, int writable)
{
    if (PyObject_GetBuffer(object, view, PyBUF_STRIDES | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0))
        < 0)
        return -1;
    if (check(view, name, itemsize, ndim) < 0) {
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* The `count` of `n` rows of smallest distance `d[i]`, written to `chosen` as `row[i]` (i itself
 * where `row` is NULL): rows nearer than the count-th nearest first, then rows at its distance,
 * each in the order given (as many as fit); every row where fewer than `count` are given.
 * Found from a count of rows per distance; a distance past the promised `values` is counted as
 * the last (no write out of bounds). Returns how many rows were written. */
static Py_ssize_t
nearest_of(const uint16_t *d, const int64_t *row, Py_ssize_t n, Py_ssize_t count, Py_ssize_t values,
           int64_t *chosen)
{
    uint32_t tally[MAX_VALUES];
    memset(tally, 0, (size_t)values * sizeof(uint32_t));
    for (Py_ssize_t i = 0; i < n; i++)
        tally[d[i] < values ? d[i] : values - 1]++;
    Py_ssize_t farthest = 0, nearer = 0, written = 0;
    while (farthest < values && nearer + (Py_ssize_t)tally[farthest] < count)
        nearer += tally[farthest++];
    for (Py_ssize_t i = 0; i < n; i++)
        if (d[i] < farthest)
            chosen[written++] = row != NULL ? row[i] : i;
    for (Py_ssize_t i = 0; i < n && written < count; i++)
        if (d[i] == farthest)
            chosen[written++] = row != NULL ? row[i] : i;
    return written;
}

/* Every this many rows' distance is looked at to guess how near the nearest rows are (as
 * memory.embeddings.index's numpy steps do). */
#define SAMPLE_STEP 16

/* `nearest_of` all rows, counting only the rows within the distance that every SAMPLE_STEP-th
 * row's shows to hold about twice `count`: the count-th nearest row is among them, so the rows
 * chosen are the same, and a few thousand rows are counted instead of every row (0.15 against
 * 0.03 ms at 100,000 rows). -1 where fewer than `count` rows are that near, or many more than
 * guessed (rows hidden by a filter, or a guess from too few rows): every row is counted then. */
static Py_ssize_t
nearest_sampled(const uint16_t *d, Py_ssize_t rows, Py_ssize_t count, Py_ssize_t values,
                int64_t *chosen)
{
    Py_ssize_t samples = (rows + SAMPLE_STEP - 1) / SAMPLE_STEP;
    if (count < 1 || samples < 2 || count > rows / 4)
        return -1;
    uint32_t tally[MAX_VALUES];
    memset(tally, 0, (size_t)values * sizeof(uint32_t));
    for (Py_ssize_t r = 0; r < rows; r += SAMPLE_STEP)
        tally[d[r] < values ? d[r] : values - 1]++;
    Py_ssize_t kth = (2 * count * samples + rows - 1) / rows, guess = 0, below = 0;
    if (kth > samples - 1)
        kth = samples - 1;
    while (below + (Py_ssize_t)tally[guess] <= kth)
        below += tally[guess++];
    Py_ssize_t room = 4 * count + 1024, found = 0;
    int64_t *near = malloc((size_t)room * (sizeof(int64_t) + sizeof(uint16_t)));
    if (near == NULL)
        return -1;
    uint16_t *near_d = (uint16_t *)(near + room);
    for (Py_ssize_t r = 0; r < rows; r++)
        if (d[r] <= guess) {
            if (found == room) {
                free(near);
                return -1;
            }
            near[found] = r;
            near_d[found++] = d[r];
        }
    Py_ssize_t written = found < count ? -1 : nearest_of(near_d, near, found, count, values, chosen);
    free(near);
    return written;
}

PyDoc_STRVAR(nearest_rows_doc,
"nearest_rows(signs, query, floor, count, values, distance, out) -> int\n\n"
"The `count` rows of smallest sign-bit distance, written to `out` (int64): rows nearer than the\n"
"count-th nearest row first, then rows at its distance, each in row order (as many as fit).\n"
"`signs` is uint64 (words, rows) with each word's rows contiguous; `query` uint64 (words);\n"
"`floor` uint16 (rows), each row's least distance; every distance is below `values`;\n"
"`distance` uint16 (rows) is scratch. Returns how many rows were written.");

static PyObject *
nearest_rows(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *result = NULL;
    PyObject *o_signs, *o_query, *o_floor, *o_distance, *o_out;
    Py_ssize_t count, values;
    if (!PyArg_ParseTuple(args, "OOOnnOO:nearest_rows", &o_signs, &o_query, &o_floor, &count,
                          &values, &o_distance, &o_out))
        return NULL;
    Py_buffer signs, query, floor, distance, out;
    if (get(o_signs, &signs, "signs", 8, 2, 0) < 0)
        return NULL;
    if (get(o_query, &query, "query", 8, 1, 0) < 0)
        goto release_signs;
    if (get(o_floor, &floor, "floor", 2, 1, 0) < 0)
        goto release_query;
    if (get(o_distance, &distance, "distance", 2, 1, 1) < 0)
        goto release_floor;
    if (get(o_out, &out, "out", 8, 1, 1) < 0)
        goto release_distance;

    Py_ssize_t words = signs.shape[0], rows = signs.shape[1];
    if (query.shape[0] != words || floor.shape[0] != rows || distance.shape[0] < rows
        || count < 0 || out.shape[0] < count || values < 1 || values > MAX_VALUES
        || signs.strides[0] % 8) {
        PyErr_SetString(PyExc_ValueError, "nearest_rows: the arrays' sizes do not match");
        goto release_out;
    }
    Py_ssize_t written;
    uint16_t *d = distance.buf;
    int64_t *chosen = out.buf;
    Py_BEGIN_ALLOW_THREADS
    loops[in_use].run(signs.buf, signs.strides[0] / 8, words, rows, query.buf, floor.buf, d);
    written = nearest_sampled(d, rows, count, values, chosen);
    if (written < 0)
        written = nearest_of(d, NULL, rows, count, values, chosen);
    Py_END_ALLOW_THREADS
    result = PyLong_FromSsize_t(written);

release_out:
    PyBuffer_Release(&out);
release_distance:
    PyBuffer_Release(&distance);
release_floor:
    PyBuffer_Release(&floor);
release_query:
    PyBuffer_Release(&query);
release_signs:
    PyBuffer_Release(&signs);
    return result;
}

PyDoc_STRVAR(scores_doc,
"scores(codes, rows, query, scales, out)\n\n"
"out[i] = dot(codes[rows[i]], query) * scales[rows[i]]: `codes` int8 (all rows, dimensions),\n"
"`rows` int64, `query` float32 (dimensions), `scales` float32 (all rows), `out` float32.");

static PyObject *
scores(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *result = NULL;
    PyObject *o_codes, *o_rows, *o_query, *o_scales, *o_out;
    if (!PyArg_ParseTuple(args, "OOOOO:scores", &o_codes, &o_rows, &o_query, &o_scales, &o_out))
        return NULL;
    Py_buffer codes, rows, query, scales, out;
    if (get(o_codes, &codes, "codes", 1, 2, 0) < 0)
        return NULL;
    if (get(o_rows, &rows, "rows", 8, 1, 0) < 0)
        goto release_codes;
    if (get(o_query, &query, "query", 4, 1, 0) < 0)
        goto release_rows;
    if (get(o_scales, &scales, "scales", 4, 1, 0) < 0)
        goto release_query;
    if (get(o_out, &out, "out", 4, 1, 1) < 0)
        goto release_scales;

    Py_ssize_t total = codes.shape[0], dimensions = codes.shape[1], n = rows.shape[0];
    const int64_t *chosen = rows.buf;
    if (query.shape[0] != dimensions || scales.shape[0] < total || out.shape[0] < n) {
        PyErr_SetString(PyExc_ValueError, "scores: the arrays' sizes do not match");
        goto release_out;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (chosen[i] < 0 || chosen[i] >= total) {
            PyErr_SetString(PyExc_IndexError, "scores: a row is out of range");
            goto release_out;
        }
    Py_BEGIN_ALLOW_THREADS
    dots(codes.buf, codes.strides[0], dimensions, chosen, n, query.buf, scales.buf, out.buf);
    Py_END_ALLOW_THREADS
    result = Py_None;
    Py_INCREF(result);

release_out:
    PyBuffer_Release(&out);
release_scales:
    PyBuffer_Release(&scales);
release_query:
    PyBuffer_Release(&query);
release_rows:
    PyBuffer_Release(&rows);
release_codes:
    PyBuffer_Release(&codes);
    return result;
}

PyDoc_STRVAR(popcounts_doc,
"popcounts() -> tuple[str, ...]\n\n"
"The sign-bit distance loops this processor runs, fastest first: nearest_rows runs the first\n"
"unless use_popcount chose another.");

static PyObject *
popcounts(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    PyObject *names = PyList_New(0);
    if (names == NULL)
        return NULL;
    for (int i = 0; i < LOOPS; i++) {
        if (!loops[i].supported)
            continue;
        PyObject *name = PyUnicode_FromString(loops[i].name);
        if (name == NULL || PyList_Append(names, name) < 0) {
            Py_XDECREF(name);
            Py_DECREF(names);
            return NULL;
        }
        Py_DECREF(name);
    }
    PyObject *result = PyList_AsTuple(names);
    Py_DECREF(names);
    return result;
}

PyDoc_STRVAR(popcount_doc, "popcount() -> str\n\nThe sign-bit distance loop nearest_rows runs.");

static PyObject *
popcount(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return PyUnicode_FromString(loops[in_use].name);
}

PyDoc_STRVAR(use_popcount_doc,
"use_popcount(name)\n\n"
"Run the sign-bit distance loop `name` (one of popcounts()) from now on: for tests, which\n"
"compare every loop's rows with numpy's on whatever processor they run.");

static PyObject *
use_popcount(PyObject *self, PyObject *arg)
{
    (void)self;
    const char *name = PyUnicode_AsUTF8(arg);
    if (name == NULL)
        return NULL;
    for (int i = 0; i < LOOPS; i++)
        if (loops[i].supported && strcmp(loops[i].name, name) == 0) {
            in_use = i;
            Py_RETURN_NONE;
        }
    PyErr_Format(PyExc_ValueError, "use_popcount: this processor does not run %R", arg);
    return NULL;
}

static PyMethodDef methods[] = {
    {"popcounts", popcounts, METH_NOARGS, popcounts_doc},
    {"popcount", popcount, METH_NOARGS, popcount_doc},
    {"use_popcount", use_popcount, METH_O, use_popcount_doc},
    {"nearest_rows", nearest_rows, METH_VARARGS, nearest_rows_doc},
    {"scores", scores, METH_VARARGS, scores_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "memory.embeddings._kernels", NULL, -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__kernels(void)
{
    choose_loops();
    return PyModule_Create(&module);
}
