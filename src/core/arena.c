/* Errors, checked sizes, random numbers and the arena allocator. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core_internal.h"

static _Thread_local char g_error[1024];

const char *tf_error(void) { return g_error; }

int tf_set_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_error, sizeof g_error, fmt, ap);
    va_end(ap);
    return -1;
}

int tf_mul_size(size_t a, size_t b, size_t *out) {
    if (a != 0 && b > SIZE_MAX / a) return 0;
    *out = a * b;
    return 1;
}

uint64_t tf_splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

float tf_hash_uniform(uint64_t seed, uint64_t i) {
    uint64_t s = seed ^ (i * 0xD1B54A32D192ED03ull);
    uint64_t r = tf_splitmix64(&s);
    return (float)(r >> 40) * (1.0f / 16777216.0f); /* 24 random bits */
}

/* ---------------------------------------------------------------- recycled buffers */

/* Buffers given back wait for the next request they fit (the smallest that
 * does: a larger one's pages beyond the request stay as they were), BUF_N of
 * them and BUF_BYTES in all, the oldest dropped first. Fresh ones get more
 * room than asked (a quarter; twice from 1 MiB on, pages untouched cost
 * nothing), so that the next batch's larger request fits too: a translation's batches grow with its sorted sources
 * (KV caches 9 to 24 MB, 22 fresh buffers of them with a quarter's room, 70k
 * page faults on the 1,000 test sentences). Shared by every thread. */
enum { BUF_N = 16 };
#define BUF_BYTES ((size_t)256 << 20)
static struct {
    void *p[BUF_N];
    size_t room[BUF_N], bytes;
    int n; /* oldest first */
} g_bufs;

static void bufs_remove(int i) {
    g_bufs.bytes -= g_bufs.room[i];
    for (int j = i + 1; j < g_bufs.n; j++) g_bufs.p[j - 1] = g_bufs.p[j], g_bufs.room[j - 1] = g_bufs.room[j];
    g_bufs.n--;
}

void *tf_buf_take(size_t bytes, size_t *room) {
    void *p = NULL;
#pragma omp critical(tf_bufs)
    {
        int best = -1;
        for (int i = 0; i < g_bufs.n; i++)
            if (g_bufs.room[i] >= bytes && (best < 0 || g_bufs.room[i] < g_bufs.room[best]))
                best = i;
        if (best >= 0) p = g_bufs.p[best], *room = g_bufs.room[best], bufs_remove(best);
    }
    if (p) return p;
    size_t want = bytes < ((size_t)1 << 20) ? bytes + bytes / 4 : bytes <= SIZE_MAX / 2 ? 2 * bytes : bytes;
    want = want ? (want + 63) & ~(size_t)63 : 64;
    if (!(p = aligned_alloc(64, want))) return NULL;
    *room = want;
    return p;
}

void tf_buf_trim(void) {
    void *drop[BUF_N];
    int n = 0;
#pragma omp critical(tf_bufs)
    {
        while (g_bufs.n) drop[n++] = g_bufs.p[0], bufs_remove(0);
    }
    for (int i = 0; i < n; i++) free(drop[i]);
}

void tf_buf_give(void *p, size_t room) {
    if (!p) return;
    void *drop[BUF_N + 1];
    int n_drop = 0;
#pragma omp critical(tf_bufs)
    {
        if (room > BUF_BYTES) {
            drop[n_drop++] = p;
        } else {
            while (g_bufs.n == BUF_N || g_bufs.bytes + room > BUF_BYTES) drop[n_drop++] = g_bufs.p[0], bufs_remove(0);
            g_bufs.p[g_bufs.n] = p, g_bufs.room[g_bufs.n++] = room, g_bufs.bytes += room;
        }
    }
    for (int i = 0; i < n_drop; i++) free(drop[i]);
}

/* ---------------------------------------------------------------- arena */

typedef struct arena_block {
    struct arena_block *next;
    size_t size, used;
    unsigned char *mem; /* 64-byte aligned */
    int mapped;         /* from mmap: munmap gives it back to the system at once */
} arena_block;

struct tf_arena {
    arena_block *head; /* current block; older blocks follow */
    size_t block_bytes;
};

/* Blocks of 256 KiB and more are mapped: malloc's heap would keep the freed
 * blocks of a step when tf_arena_reset merges them (a GPT-2-124M training
 * run held 0.3 GB of them). */
enum { MAP_MIN = 1 << 18 };

/* Mapped blocks kept when their arena is freed, for the next arena: a call
 * that makes a context (tf_bert_embed per thread, a server's request, a
 * Python call) would otherwise fault in and zero its whole arena again each
 * time (a quarter to a half of MiniLM's embedding time on 200 to 1,000
 * texts). At most KEEP_N blocks and a quarter of memory; a block that fits
 * no request empties the store first, so what is kept never adds to a peak
 * beyond the process's own. Their bytes are zeroed on use (arena_take). */
enum { KEEP_N = 4 };
static struct {
    pthread_mutex_t lock;
    arena_block *b[KEEP_N];
    int n;
    size_t bytes;
} g_kept = {PTHREAD_MUTEX_INITIALIZER, {0}, 0, 0};

static void block_unmap(arena_block *b) {
    munmap(b->mem, b->size);
    free(b);
}

/* The smallest kept block of at least bytes, or NULL (the store emptied). */
static arena_block *kept_take(size_t bytes) {
    arena_block *got = NULL, *drop[KEEP_N];
    int nd = 0;
    pthread_mutex_lock(&g_kept.lock);
    int best = -1;
    for (int i = 0; i < g_kept.n; i++)
        if (g_kept.b[i]->size >= bytes && (best < 0 || g_kept.b[i]->size < g_kept.b[best]->size)) best = i;
    if (best >= 0) {
        got = g_kept.b[best];
        g_kept.b[best] = g_kept.b[--g_kept.n];
        g_kept.bytes -= got->size;
    } else {
        while (g_kept.n) drop[nd++] = g_kept.b[--g_kept.n];
        g_kept.bytes = 0;
    }
    pthread_mutex_unlock(&g_kept.lock);
    for (int i = 0; i < nd; i++) block_unmap(drop[i]);
    if (got) got->used = 0, got->next = NULL;
    return got;
}

/* A quarter of memory (1 GiB when the system does not say): read under the lock. */
static size_t kept_cap(void) {
    static size_t cap;
    if (!cap) {
        long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
        cap = pages > 0 && size > 0 ? (size_t)pages / 4 * (size_t)size : (size_t)1 << 30;
    }
    return cap;
}

/* b kept, or unmapped when the store is full. */
static void kept_give(arena_block *b) {
    pthread_mutex_lock(&g_kept.lock);
    size_t cap = kept_cap();
    int keep = g_kept.n < KEEP_N && b->size <= cap - g_kept.bytes && g_kept.bytes <= cap;
    if (keep) g_kept.b[g_kept.n++] = b, g_kept.bytes += b->size;
    pthread_mutex_unlock(&g_kept.lock);
    if (!keep) block_unmap(b);
}

void tf_arena_trim(void) {
    arena_block *b = kept_take(SIZE_MAX); /* no block is that large: kept_take empties the store */
    if (b) block_unmap(b);
}

static arena_block *block_new(size_t bytes) {
    size_t size = (bytes + 63) & ~(size_t)63;
    if (size >= MAP_MIN) {
        arena_block *k = kept_take(size);
        if (k) return k;
    }
    arena_block *b = malloc(sizeof *b);
    if (!b) return NULL;
    b->size = size;
    b->mapped = b->size >= MAP_MIN;
    if (b->mapped) {
        void *m = mmap(NULL, b->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        b->mem = m == MAP_FAILED ? NULL : m;
        /* 2 MiB pages where the kernel offers them (transparent_hugepage
         * "madvise"): a decoding step streams every weight once, and with 4 KiB
         * pages a 0.5 GB model is 122k TLB entries (GPT-2-124M greedy, one
         * thread: 2-3% more tokens/s). A hint; refused, nothing changes. */
        if (b->mem && b->size >= ((size_t)8 << 20)) (void)madvise(b->mem, b->size, MADV_HUGEPAGE);
    } else {
        b->mem = aligned_alloc(64, b->size);
    }
    if (!b->mem) {
        free(b);
        return NULL;
    }
    b->used = 0;
    b->next = NULL;
    return b;
}

static void block_free(arena_block *b) {
    if (b->mapped) munmap(b->mem, b->size);
    else free(b->mem);
    free(b);
}

tf_arena *tf_arena_new(size_t block_bytes) {
    tf_arena *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    a->block_bytes = block_bytes ? block_bytes : ((size_t)1 << 20);
    return a;
}

void tf_arena_free(tf_arena *a) {
    if (!a) return;
    arena_block *b = a->head;
    while (b) {
        arena_block *n = b->next;
        if (b->mapped) kept_give(b); /* for the next arena */
        else block_free(b);
        b = n;
    }
    free(a);
}

/* Zero n bytes (a multiple of 64); large buffers (a step's activations and
 * gradients) in 64 KiB pieces on every thread. */
static void zero(unsigned char *p, size_t n) {
    enum { PIECE = 1 << 16 };
    int64_t pieces = (int64_t)((n + PIECE - 1) / PIECE);
    if (pieces < 8 || tf_threads_free() < 2) { /* small or one thread: not even an inactive parallel region (~1 us each, most allocations) */
        memset(p, 0, n);
        return;
    }
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < pieces; i++) {
        size_t off = (size_t)i * PIECE;
        memset(p + off, 0, n - off < PIECE ? n - off : PIECE);
    }
}

static void *arena_take(tf_arena *a, size_t bytes, int zeroed);

void *tf_arena_alloc(tf_arena *a, size_t bytes) { return arena_take(a, bytes, 1); }
void *tf_arena_alloc_uninit(tf_arena *a, size_t bytes) { return arena_take(a, bytes, 0); }

static void *arena_take(tf_arena *a, size_t bytes, int zeroed) {
    if (bytes > SIZE_MAX - 64) {
        tf_set_error("arena: allocation of %zu bytes overflows", bytes);
        return NULL;
    }
    size_t need = (bytes + 63) & ~(size_t)63;
    if (need == 0) need = 64;
    arena_block *b = a->head;
    if (!b || b->size - b->used < need) {
        /* blocks double (each the size of those before it): a step that
         * grows to hundreds of MB (an encoder over a batch of sources) makes
         * a few, the large ones in 2 MiB pages (block_new), where 1 MiB blocks
         * took a page fault per 4 KiB (a quarter of greedy translation's
         * page faults) */
        size_t sz = need > a->block_bytes ? need : a->block_bytes, held = 0;
        for (arena_block *o = a->head; o; o = o->next) held += o->size;
        sz = held > sz ? held : sz;
        arena_block *nb = block_new(sz);
        if (!nb) {
            tf_set_error("arena: out of memory allocating %zu bytes", sz);
            return NULL;
        }
        nb->next = a->head;
        a->head = nb;
        b = nb;
    }
    void *p = b->mem + b->used;
    b->used += need;
    if (zeroed) zero(p, need);
    return p;
}

void tf_arena_reset(tf_arena *a) {
    if (!a || !a->head) return;
    if (a->head->next) {
        /* Several blocks: merge them into one block of their total size and
         * a quarter more, so that the next step of the same shape allocates
         * nothing, and one that grows a little (a decoding step over one
         * more cached position) neither: a fresh block costs a page fault
         * per page touched. The room never touched takes no memory. */
        size_t total = 0;
        arena_block *b = a->head;
        while (b) {
            arena_block *n = b->next;
            total += b->size;
            block_free(b);
            b = n;
        }
        a->head = block_new(total + total / 4); /* NULL is fine: the next alloc retries */
        return;
    }
    a->head->used = 0;
}

size_t tf_arena_used(const tf_arena *a) {
    size_t n = 0;
    for (arena_block *b = a ? a->head : NULL; b; b = b->next) n += b->used;
    return n;
}

size_t tf_arena_reserved(const tf_arena *a, int *blocks) {
    size_t n = 0;
    int k = 0;
    for (arena_block *b = a ? a->head : NULL; b; b = b->next) n += b->size, k++;
    if (blocks) *blocks = k;
    return n;
}
