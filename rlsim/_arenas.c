/* rlsim._arenas: pymalloc's arenas on transparent huge pages (Linux).

Owns one region of reserved address space that pymalloc's arenas (1 MiB blocks that hold
every small Python object) are cut from once `install()` has run, marked MADV_HUGEPAGE so
the kernel backs it with 2 MiB pages where it can. A large run keeps ~17,000 trajectories
in flight, each read once every few milliseconds of simulated time, so almost every read of
one misses the caches and, with 4 KiB pages, the TLB too: its page walk is a chain of
further misses (issue 40). A 2 MiB page covers 512 times the memory per TLB entry.

- Arenas come from the region in address order, or from the stack of freed ones (the
  latest first). A freed arena stays mapped; once every arena of its 2 MiB page is free,
  the page goes back to the system (MADV_DONTNEED), and the next use faults a fresh one.
- Requests of another size, arenas freed that were not cut from the region (allocated
  before `install`), and every request once the region is full go to the allocator that
  was in place before.
- The region is reserved PROT_NONE (no memory is committed) and made writable a chunk at a
  time, as arenas are cut.
- pymalloc calls these with the GIL held: no lock is needed.

Where the kernel has no transparent huge pages (or they are off), the region is still
used, with 4 KiB pages. Off Linux, `install()` does nothing and returns False.
CPython 3.15 adds the same for its own arenas (gh-144319); rlsim runs on 3.11.
*/
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#if defined(__linux__) && defined(MADV_HUGEPAGE) && defined(MADV_DONTNEED)
#define HAVE_REGION 1
#else
#define HAVE_REGION 0
#endif

#define HUGE_BYTES ((size_t)2 << 20)     /* one transparent huge page on x86-64 and arm64 */
#define REGION_BYTES ((size_t)16 << 30)  /* address space reserved, not memory */
#define CHUNK_BYTES ((size_t)64 << 20)   /* made writable at a time */

enum { UNUSED = 0, IN_USE = 1, FREE = 2, RELEASED = 3 };

static int installed = 0;
static int advised = 0;        /* MADV_HUGEPAGE accepted (the kernel has THP) */
static char *base = NULL;      /* the region, aligned to HUGE_BYTES */
static size_t slot_bytes = 0;  /* pymalloc's arena size, from its first request */
static size_t n_slots = 0;     /* slots in the region */
static size_t cut = 0;         /* slots cut so far, in address order */
static size_t writable = 0;    /* bytes from `base` made writable */
static unsigned char *state = NULL;  /* per slot */
static uint32_t *free_stack = NULL;  /* freed slots, the latest on top */
static size_t n_free = 0;
static size_t released = 0;    /* huge pages given back so far */
static size_t fallbacks = 0;   /* requests served by the previous allocator */
static PyObjectArenaAllocator previous;

#if HAVE_REGION
static int grow(size_t upto) {
    /* Make the region writable up to `upto` bytes, a chunk at a time. */
    while (writable < upto) {
        size_t n = CHUNK_BYTES;
        if (writable + n > REGION_BYTES) n = REGION_BYTES - writable;
        if (mprotect(base + writable, n, PROT_READ | PROT_WRITE) != 0) return -1;
        if (madvise(base + writable, n, MADV_HUGEPAGE) == 0) advised = 1;
        writable += n;
    }
    return 0;
}

static void *arena_alloc(void *ctx, size_t size) {
    (void)ctx;
    if (slot_bytes == 0 && size >= 4096 && size <= HUGE_BYTES && HUGE_BYTES % size == 0) {
        slot_bytes = size;
        n_slots = REGION_BYTES / size;
        state = calloc(n_slots, 1);
        free_stack = malloc(n_slots * sizeof(uint32_t));
        if (state == NULL || free_stack == NULL) {
            free(state);
            free(free_stack);
            state = NULL;
            free_stack = NULL;
            slot_bytes = (size_t)-1;  /* never again */
        }
    }
    if (size == slot_bytes) {
        size_t i;
        if (n_free > 0) {
            i = free_stack[--n_free];
        } else if (cut < n_slots && grow((cut + 1) * slot_bytes) == 0) {
            i = cut++;
        } else {
            fallbacks++;
            return previous.alloc(previous.ctx, size);
        }
        state[i] = IN_USE;
        return base + i * slot_bytes;
    }
    fallbacks++;
    return previous.alloc(previous.ctx, size);
}

static void arena_free(void *ctx, void *ptr, size_t size) {
    (void)ctx;
    char *p = (char *)ptr;
    if (base == NULL || p < base || p >= base + REGION_BYTES || size != slot_bytes) {
        previous.free(previous.ctx, ptr, size);
        return;
    }
    size_t i = (size_t)(p - base) / slot_bytes;
    state[i] = FREE;
    free_stack[n_free++] = (uint32_t)i;
    /* Give the huge page back once none of its arenas is in use. */
    size_t per_page = HUGE_BYTES / slot_bytes;
    size_t first = i - i % per_page;
    for (size_t j = first; j < first + per_page; j++) {
        if (state[j] == IN_USE || state[j] == UNUSED) return;
    }
    if (madvise(base + first * slot_bytes, HUGE_BYTES, MADV_DONTNEED) == 0) {
        for (size_t j = first; j < first + per_page; j++) state[j] = RELEASED;
        released++;
    }
}
#endif

static PyObject *install(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
#if HAVE_REGION
    if (!installed) {
        /* Reserved with room to align it to a huge page; nothing is committed. */
        char *r = mmap(NULL, REGION_BYTES + HUGE_BYTES, PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (r == MAP_FAILED) Py_RETURN_FALSE;
        base = (char *)(((uintptr_t)r + HUGE_BYTES - 1) & ~(uintptr_t)(HUGE_BYTES - 1));
        PyObject_GetArenaAllocator(&previous);
        PyObjectArenaAllocator mine = {NULL, arena_alloc, arena_free};
        PyObject_SetArenaAllocator(&mine);
        installed = 1;
    }
    Py_RETURN_TRUE;
#else
    Py_RETURN_FALSE;
#endif
}

static PyObject *stats(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    size_t in_use = 0, free_resident = 0, free_released = 0;
    for (size_t i = 0; i < cut && state != NULL; i++) {
        in_use += state[i] == IN_USE;
        free_resident += state[i] == FREE;
        free_released += state[i] == RELEASED;
    }
    return Py_BuildValue(
        "{s:O,s:O,s:n,s:n,s:n,s:n,s:n,s:n,s:n}",
        "installed", installed ? Py_True : Py_False,
        "huge_pages_advised", advised ? Py_True : Py_False,
        "arena_bytes", (Py_ssize_t)(slot_bytes == (size_t)-1 ? 0 : slot_bytes),
        "arenas_cut", (Py_ssize_t)cut,
        "arenas_in_use", (Py_ssize_t)in_use,
        "arenas_free", (Py_ssize_t)free_resident,
        "arenas_released", (Py_ssize_t)free_released,
        "pages_released", (Py_ssize_t)released,
        "fallbacks", (Py_ssize_t)fallbacks);
}

static PyMethodDef methods[] = {
    {"install", install, METH_NOARGS,
     "Cut pymalloc's arenas from now on from a region on transparent huge pages (once per "
     "process). True when the region is in place, False where it cannot be (not Linux, "
     "or no address space to reserve)."},
    {"stats", stats, METH_NOARGS, "The region's counts of arenas, as a dict."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "rlsim._arenas",
    "pymalloc's arenas on transparent huge pages (see rlsim/heap.py).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__arenas(void) { return PyModule_Create(&module); }
