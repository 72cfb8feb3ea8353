/* The vector index's two loops over rows, compiled (memory.embeddings.index uses numpy where
 * this module was not built: the same rows, the same scores up to float rounding).
 *
 * nearest_rows: every row's Hamming distance to the query's sign bits, raised to the row's floor,
 * and the `count` rows of smallest distance, in one pass over the sign bits and one over the
 * distances (numpy takes a pass per word, then the floor, then a sample, a count and a select).
 * scores: the dot product of each chosen row's int8 codes with the float query, times its scale
 * (numpy gathers the rows, converts them to float and calls BLAS on the copy).
 *
 * The popcount runs on AVX-512 VPOPCNTDQ where the processor has it, else on POPCNT, else in
 * plain C: chosen once, when the module is loaded, so one build runs on any x86-64.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define KERNELS_X86 1
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

__attribute__((target("avx512f,avx512bw,avx512vl,avx512vpopcntdq"))) static void
distances_avx512(const uint64_t *signs, Py_ssize_t stride, Py_ssize_t words, Py_ssize_t rows,
                 const uint64_t *query, const uint16_t *floor, uint16_t *distance)
{
    DISTANCES_BODY
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

static distances_fn distances = distances_plain;
static dots_fn dots = dots_plain;
static const char *distances_name = "plain";

static void
choose_distances(void)
{
#ifdef KERNELS_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")
        && __builtin_cpu_supports("avx512vl"))
        dots = dots_avx512;
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        dots = dots_avx2;
    if (__builtin_cpu_supports("avx512vpopcntdq") && __builtin_cpu_supports("avx512bw")
        && __builtin_cpu_supports("avx512vl")) {
        distances = distances_avx512;
        distances_name = "avx512vpopcntdq";
    }
    else if (__builtin_cpu_supports("popcnt")) {
        distances = distances_popcnt;
        distances_name = "popcnt";
    }
#endif
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
    Py_ssize_t written = 0;
    uint16_t *d = distance.buf;
    int64_t *chosen = out.buf;
    Py_BEGIN_ALLOW_THREADS
    distances(signs.buf, signs.strides[0] / 8, words, rows, query.buf, floor.buf, d);
    /* The count-th nearest row's distance, from a count of rows per distance (a distance past
     * the promised `values` is counted as the last: no write out of bounds). Where fewer than
     * `count` rows are there, every row is taken, in row order. */
    /* Four tallies, summed after: rows at the same distance one after another do not each
     * wait for the last one's count to be stored. */
    uint32_t tallies[4][MAX_VALUES];
    Py_ssize_t within[MAX_VALUES];
    for (int t = 0; t < 4; t++)
        memset(tallies[t], 0, (size_t)values * sizeof(uint32_t));
    for (Py_ssize_t r = 0; r < rows; r++)
        tallies[r & 3][d[r] < values ? d[r] : values - 1]++;
    for (Py_ssize_t v = 0; v < values; v++)
        within[v] = (Py_ssize_t)tallies[0][v] + tallies[1][v] + tallies[2][v] + tallies[3][v];
    Py_ssize_t farthest = 0, nearer = 0;
    while (farthest < values && nearer + within[farthest] < count)
        nearer += within[farthest++];
    for (Py_ssize_t r = 0; r < rows; r++)
        if (d[r] < farthest)
            chosen[written++] = r;
    for (Py_ssize_t r = 0; r < rows && written < count; r++)
        if (d[r] == farthest)
            chosen[written++] = r;
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

static PyMethodDef methods[] = {
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
    choose_distances();
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddStringConstant(m, "POPCOUNT", distances_name) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
