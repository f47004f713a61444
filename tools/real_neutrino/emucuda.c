/*
 * emucuda: an emulated CUDA driver (libcuda.so.1) for running the REAL Neutrino hook driver, CLI and
 * probe engine on a machine without a GPU. Our own code; it includes no NVIDIA header.
 *
 * What it does
 *  - Device memory is host memory: a CUdeviceptr is a host pointer from an anonymous mapping, 2 MiB
 *    aligned as the real driver's large allocations. Memset and memcpy
 *    really happen (a memset of zeros on memory nobody wrote is skipped, so the hook's 256 MB
 *    benchmark flush buffer costs no RSS).
 *  - Modules: PTX text or ELF cubins are accepted as they are; no code ever runs. For PTX, the
 *    number of .param entries of each .entry is parsed (the hook passes the probe buffers after
 *    the kernel's own parameters).
 *  - Launches run nothing. Instead, the launch's probe buffers are FILLED from files:
 *      $EMUCUDA_FILL/<kernel>.probe<k>.bin  raw bytes copied into probe buffer k (rest stays zero)
 *      $EMUCUDA_FILL/<kernel>.probe<k>.rel.bin  the same for (clock, address) records whose address is
 *                                           (kernel parameter index + 1) << 48 | offset (relocated)
 *      $EMUCUDA_FILL/<kernel>.count         bytes per thread reported by the count kernel (dmat)
 *    Which build a launch runs is known from the hook driver's JIT order (neutrino/src/cuda.c):
 *    for each kernel it loads the assembled probed.bin, then pruned.bin, then countd.bin for a
 *    dynamic probe, each with cuModuleLoadData + cuModuleGetFunction(name). So the 1st ELF
 *    module holding a kernel name is its probed build, the 2nd its pruned build, the 3rd its
 *    count build; PTX modules (the workload's own) are originals.
 *    A probed or count launch's buffers are the parameters after the kernel's own ones that point
 *    at allocations made since the previous launch (the hook allocates and zero-fills them just
 *    before launching).
 *  - Time is modelled: a virtual clock advances by EMUCUDA_KERNEL_MS per original/pruned/count
 *    launch (default 1.0) plus EMUCUDA_BLOCK_US microseconds per block of its grid (default 0), by that times EMUCUDA_PROBED_SLOWDOWN per probed launch (default 1.5),
 *    and by bytes / EMUCUDA_COPY_GBPS (default 25) per copy; cuEventRecord stamps the clock and
 *    cuEventElapsedTime returns the difference, so the hook's prologue/kernel/epilogue lines
 *    carry modelled times.
 *  - A device like an A100: 108 SMs, compute capability 8.0.
 * Every other driver entry point is exported by emucuda_stubs.c (generated from cuda.h's list of
 * names by build.py) and returns CUDA_ERROR_NOT_SUPPORTED.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef int CUdevice;

#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_NOT_FOUND 500
#define MAX_ALLOCS 4096
#define MAX_MODULES 256
#define MAX_FUNCS 1024
#define MAX_EVENTS 1024
#define NAME_LEN 512

enum role { ROLE_ORIGINAL = 0, ROLE_PROBED = 1, ROLE_PRUNED = 2, ROLE_COUNTD = 3 };
static const char* role_names[] = {"original", "probed", "pruned", "countd"};

struct alloc { char* ptr; size_t size; int written; unsigned long epoch; char* map; size_t map_len; };
#define MAX_ENTRIES 16
struct module {
    int is_elf;
    char* ptx;                               /* PTX text of a workload's module */
    int n_entries;                           /* ELF: kernels and their parameter counts */
    char entry[MAX_ENTRIES][NAME_LEN];
    int entry_params[MAX_ENTRIES];
};
struct func { int module; char name[NAME_LEN]; int role; int n_param; int n_total; };

static struct alloc allocs[MAX_ALLOCS];
static int n_allocs = 0;
static struct module modules[MAX_MODULES];
static int n_modules = 0;
static struct func funcs[MAX_FUNCS];
static int n_funcs = 0;
static double events[MAX_EVENTS];
static int n_events = 0;
static double clock_ms = 0.0;
static unsigned long launch_epoch = 1; /* allocations newer than the last launch are candidates */
static int ctx_dummy = 1;

static double env_double(const char* name, double fallback) {
    const char* v = getenv(name);
    return v && *v ? atof(v) : fallback;
}

static struct alloc* find_alloc(CUdeviceptr p) {
    for (int i = 0; i < n_allocs; i++)
        if (allocs[i].ptr && (CUdeviceptr)allocs[i].ptr <= p && p < (CUdeviceptr)allocs[i].ptr + allocs[i].size)
            return &allocs[i];
    return NULL;
}

/* ---------------------------------------------------------------- init, device, context */
CUresult cuInit(unsigned int flags) { (void)flags; return CUDA_SUCCESS; }
CUresult cuDriverGetVersion(int* v) { *v = 12040; return CUDA_SUCCESS; }
CUresult cuDeviceGetCount(int* n) { *n = 1; return CUDA_SUCCESS; }
CUresult cuDeviceGet(CUdevice* d, int ordinal) { *d = ordinal; return ordinal == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; }
CUresult cuDeviceGetName(char* name, int len, CUdevice d) { (void)d; snprintf(name, len, "emucuda A100 (emulated)"); return CUDA_SUCCESS; }
CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice d) { (void)d; *bytes = 40ull << 30; return CUDA_SUCCESS; }
CUresult cuDeviceGetAttribute(int* v, int attr, CUdevice d) {
    (void)d;
    switch (attr) {
        case 16: *v = 108; break;    /* MULTIPROCESSOR_COUNT */
        case 75: *v = 8; break;      /* COMPUTE_CAPABILITY_MAJOR */
        case 76: *v = 0; break;      /* COMPUTE_CAPABILITY_MINOR */
        case 10: *v = 32; break;     /* WARP_SIZE */
        case 1: *v = 1024; break;    /* MAX_THREADS_PER_BLOCK */
        default: *v = 0;
    }
    return CUDA_SUCCESS;
}
CUresult cuCtxCreate_v2(void** ctx, unsigned int flags, CUdevice d) { (void)flags; (void)d; *ctx = &ctx_dummy; return CUDA_SUCCESS; }
CUresult cuDevicePrimaryCtxRetain(void** ctx, CUdevice d) { (void)d; *ctx = &ctx_dummy; return CUDA_SUCCESS; }
CUresult cuCtxSetCurrent(void* ctx) { (void)ctx; return CUDA_SUCCESS; }
CUresult cuCtxGetCurrent(void** ctx) { *ctx = &ctx_dummy; return CUDA_SUCCESS; }
CUresult cuCtxSynchronize(void) { return CUDA_SUCCESS; }
CUresult cuCtxDestroy_v2(void* ctx) { (void)ctx; return CUDA_SUCCESS; }
CUresult cuStreamSynchronize(void* s) { (void)s; return CUDA_SUCCESS; }

CUresult cuGetErrorName(CUresult e, const char** s) { *s = e == 0 ? "CUDA_SUCCESS" : "CUDA_ERROR_EMULATED"; return CUDA_SUCCESS; }
CUresult cuGetErrorString(CUresult e, const char** s) { *s = e == 0 ? "no error" : "emulated driver error"; return CUDA_SUCCESS; }

/* ---------------------------------------------------------------- memory */
/* Like the real driver's, allocations start on a 2 MiB boundary (a DMAT page never holds two tensors);
 * anonymous mappings are zero and take no memory until written, as calloc's large blocks. */
#define ALLOC_ALIGN (2ul << 20)
CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t size) {
    if (n_allocs >= MAX_ALLOCS) return CUDA_ERROR_INVALID_VALUE;
    size_t len = (size ? size : 1) + ALLOC_ALIGN;
    char* map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (map == MAP_FAILED) return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
    char* mem = (char*)(((uintptr_t)map + ALLOC_ALIGN - 1) & ~(uintptr_t)(ALLOC_ALIGN - 1));
    allocs[n_allocs++] = (struct alloc){mem, size, 0, launch_epoch, map, len};
    *p = (CUdeviceptr)mem;
    return CUDA_SUCCESS;
}
CUresult cuMemFree_v2(CUdeviceptr p) {
    struct alloc* a = find_alloc(p);
    if (!a) return CUDA_ERROR_INVALID_VALUE;
    munmap(a->map, a->map_len);
    a->ptr = NULL;
    return CUDA_SUCCESS;
}
CUresult cuMemsetD32_v2(CUdeviceptr p, unsigned int value, size_t n) {
    struct alloc* a = find_alloc(p);
    if (a && !a->written && value == 0) return CUDA_SUCCESS; /* calloc'd and untouched: already zero */
    uint32_t* q = (uint32_t*)p;
    for (size_t i = 0; i < n; i++) q[i] = value;
    if (a) a->written = 1;
    clock_ms += n * 4.0 / (env_double("EMUCUDA_MEMSET_GBPS", 1000.0) * 1e6);
    return CUDA_SUCCESS;
}
CUresult cuMemsetD16_v2(CUdeviceptr p, unsigned short value, size_t n) {
    struct alloc* a = find_alloc(p);
    clock_ms += n * 2.0 / (env_double("EMUCUDA_MEMSET_GBPS", 1000.0) * 1e6); /* timed even when skipped */
    if (a && !a->written && value == 0) return CUDA_SUCCESS; /* calloc'd and untouched: already zero */
    uint16_t* q = (uint16_t*)p;
    for (size_t i = 0; i < n; i++) q[i] = value;
    if (a) a->written = 1;
    return CUDA_SUCCESS;
}
CUresult cuMemsetD8_v2(CUdeviceptr p, unsigned char value, size_t n) {
    memset((void*)p, value, n);
    struct alloc* a = find_alloc(p);
    if (a) a->written = 1;
    return CUDA_SUCCESS;
}
CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t n) {
    memcpy((void*)dst, src, n);
    struct alloc* a = find_alloc(dst);
    if (a) a->written = 1;
    clock_ms += n / (env_double("EMUCUDA_COPY_GBPS", 25.0) * 1e6);
    return CUDA_SUCCESS;
}
CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t n) {
    memcpy(dst, (const void*)src, n);
    clock_ms += n / (env_double("EMUCUDA_COPY_GBPS", 25.0) * 1e6);
    return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------- modules and functions */
static int ptx_param_count(const char* ptx, const char* name) {
    char pat[NAME_LEN + 16];
    snprintf(pat, sizeof pat, ".entry %s(", name);
    const char* at = strstr(ptx, pat);
    if (!at) return -1;
    const char* end = strchr(at, ')');
    int n = 0;
    for (const char* q = strstr(at, ".param"); q && (!end || q < end); q = strstr(q + 6, ".param")) n++;
    return n;
}

/* A cubin lists each kernel's parameters in its ".nv.info.<kernel>" section: one EIATTR_KPARAM_INFO
 * (0x17) attribute per parameter. Attributes are <format u8, attribute u8, ...>: format 4 carries a
 * u16 size and that many bytes, the others take 4 bytes in all. The image is copied now because the
 * hook driver frees it after loading. */
static void elf_entries(struct module* m, const unsigned char* b) {
    uint64_t shoff;
    uint16_t shentsize, shnum, shstrndx;
    memcpy(&shoff, b + 0x28, 8);
    memcpy(&shentsize, b + 0x3A, 2);
    memcpy(&shnum, b + 0x3C, 2);
    memcpy(&shstrndx, b + 0x3E, 2);
    uint64_t stroff;
    memcpy(&stroff, b + shoff + (uint64_t)shstrndx * shentsize + 0x18, 8);
    for (int i = 0; i < shnum && m->n_entries < MAX_ENTRIES; i++) {
        const unsigned char* sh = b + shoff + (uint64_t)i * shentsize;
        uint32_t name;
        uint64_t off, size;
        memcpy(&name, sh, 4);
        memcpy(&off, sh + 0x18, 8);
        memcpy(&size, sh + 0x20, 8);
        const char* sname = (const char*)b + stroff + name;
        if (strncmp(sname, ".nv.info.", 9) != 0) continue;
        int n = 0;
        for (uint64_t at = 0; at + 4 <= size;) {
            unsigned char fmt = b[off + at], attr = b[off + at + 1];
            if (attr == 0x17) n++;
            if (fmt == 4) {
                uint16_t len;
                memcpy(&len, b + off + at + 2, 2);
                at += 4 + len;
            } else {
                at += 4;
            }
        }
        snprintf(m->entry[m->n_entries], NAME_LEN, "%s", sname + 9);
        m->entry_params[m->n_entries++] = n;
    }
}

static CUresult load(void** mod, const void* image) {
    if (n_modules >= MAX_MODULES) return CUDA_ERROR_INVALID_VALUE;
    const unsigned char* b = image;
    struct module* m = &modules[n_modules];
    memset(m, 0, sizeof *m);
    m->is_elf = b[0] == 0x7f && b[1] == 'E' && b[2] == 'L' && b[3] == 'F';
    if (m->is_elf) elf_entries(m, b);
    else m->ptx = strdup((const char*)image);
    *mod = (void*)(intptr_t)(n_modules + 1);
    n_modules++;
    return CUDA_SUCCESS;
}
CUresult cuModuleLoadData(void** mod, const void* image) { return load(mod, image); }
CUresult cuModuleLoadDataEx(void** mod, const void* image, unsigned int n, void* o, void** v) {
    (void)n; (void)o; (void)v; return load(mod, image);
}
CUresult cuModuleUnload(void* mod) { (void)mod; return CUDA_SUCCESS; }

CUresult cuModuleGetFunction(void** f, void* mod, const char* name) {
    int mi = (int)(intptr_t)mod - 1;
    if (mi < 0 || mi >= n_modules || n_funcs >= MAX_FUNCS) return CUDA_ERROR_NOT_FOUND;
    struct func* fn = &funcs[n_funcs];
    snprintf(fn->name, NAME_LEN, "%s", name);
    fn->module = mi;
    fn->n_param = -1;
    fn->n_total = -1;
    fn->role = ROLE_ORIGINAL;
    if (modules[mi].is_elf) {
        for (int e = 0; e < modules[mi].n_entries; e++)
            if (strcmp(modules[mi].entry[e], name) == 0) fn->n_total = modules[mi].entry_params[e];
        int builds = 0; /* ELF builds of this kernel loaded before: probed, pruned, countd in order */
        for (int i = 0; i < n_funcs; i++)
            if (modules[funcs[i].module].is_elf && strcmp(funcs[i].name, name) == 0) builds++;
        fn->role = builds == 0 ? ROLE_PROBED : builds == 1 ? ROLE_PRUNED : ROLE_COUNTD;
        for (int i = 0; i < n_funcs; i++) /* the kernel's own parameter count, from its PTX */
            if (!modules[funcs[i].module].is_elf && strcmp(funcs[i].name, name) == 0) fn->n_param = funcs[i].n_param;
    } else {
        fn->n_param = ptx_param_count(modules[mi].ptx, name);
        if (fn->n_param < 0) return CUDA_ERROR_NOT_FOUND;
    }
    *f = fn;
    n_funcs++;
    return CUDA_SUCCESS;
}
CUresult cuFuncSetAttribute(void* f, int attr, int value) { (void)f; (void)attr; (void)value; return CUDA_SUCCESS; }
CUresult cuFuncGetAttribute(int* v, int attr, void* f) { (void)attr; (void)f; *v = 0; return CUDA_SUCCESS; }

/* ---------------------------------------------------------------- events */
CUresult cuEventCreate(void** e, unsigned int flags) {
    (void)flags;
    if (n_events >= MAX_EVENTS) n_events = 0; /* the hook creates two per launch and never destroys them */
    *e = (void*)(intptr_t)(n_events++ + 1);
    return CUDA_SUCCESS;
}
CUresult cuEventRecord(void* e, void* stream) { (void)stream; events[(intptr_t)e - 1] = clock_ms; return CUDA_SUCCESS; }
CUresult cuEventSynchronize(void* e) { (void)e; return CUDA_SUCCESS; }
CUresult cuEventElapsedTime(float* ms, void* a, void* b) {
    *ms = (float)(events[(intptr_t)b - 1] - events[(intptr_t)a - 1]);
    return CUDA_SUCCESS;
}
CUresult cuEventDestroy_v2(void* e) { (void)e; return CUDA_SUCCESS; }

/* ---------------------------------------------------------------- launches */
static long fill_file(const char* kernel, const char* suffix, char* dst, size_t cap) {
    const char* dir = getenv("EMUCUDA_FILL");
    if (!dir) return -1;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.%s", dir, kernel, suffix);
    FILE* f = fopen(path, "rb");
    if (!f) return -1;
    size_t got = fread(dst, 1, cap, f);
    fclose(f);
    return (long)got;
}

/* A "<kernel>.probe<k>.rel.bin" fill holds (clock, address) records whose address names a kernel
 * parameter: (parameter index + 1) << 48 | byte offset. Each becomes that pointer argument plus the
 * offset, so a DMAT fill touches the workload's own tensors wherever the allocator put them. */
static void relocate(char* buf, size_t bytes, void** params, int n_param) {
    uint64_t* rec = (uint64_t*)buf;
    for (size_t i = 1; i < bytes / 8; i += 2) {
        uint64_t idx = rec[i] >> 48;
        if (idx == 0 || (int)idx > n_param) continue;
        rec[i] = *(uint64_t*)params[idx - 1] + (rec[i] & 0xFFFFFFFFFFFFull);
    }
}

CUresult cuLaunchKernel(void* fp, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                        unsigned int by, unsigned int bz, unsigned int shared, void* stream, void** params,
                        void** extra) {
    (void)shared; (void)stream; (void)extra;
    struct func* fn = fp;
    double kernel_ms = env_double("EMUCUDA_KERNEL_MS", 1.0)
                       + (double)gx * gy * gz * env_double("EMUCUDA_BLOCK_US", 0.0) / 1000.0;
    if (fn->role == ROLE_PROBED || fn->role == ROLE_COUNTD) {
        unsigned long threads = (unsigned long)gx * gy * gz * bx * by * bz;
        /* the parameters after the kernel's own: probe buffers (fresh allocations), then the
         * count size of a dynamic probe (a host int, not an allocation) */
        for (int k = 0; fn->n_param >= 0 && params && fn->n_param + k < fn->n_total; k++) {
            CUdeviceptr p = *(CUdeviceptr*)params[fn->n_param + k];
            struct alloc* a = find_alloc(p);
            if (!a || a->epoch != launch_epoch || (CUdeviceptr)a->ptr != p) continue; /* not a fresh probe buffer */
            if (fn->role == ROLE_COUNTD) { /* bytes each thread will save: the hook sizes the buffer by the max */
                char text[32] = {0};
                long bytes = fill_file(fn->name, "count", text, sizeof text - 1) > 0 ? atol(text) : 64;
                for (unsigned long t = 0; t < threads && (t + 1) * 8 <= a->size; t++) ((uint64_t*)a->ptr)[t] = bytes;
            } else {
                char suffix[32];
                snprintf(suffix, sizeof suffix, "probe%d.bin", k);
                if (fill_file(fn->name, suffix, a->ptr, a->size) < 0) {
                    snprintf(suffix, sizeof suffix, "probe%d.rel.bin", k);
                    long got = fill_file(fn->name, suffix, a->ptr, a->size);
                    if (got > 0) relocate(a->ptr, (size_t)got, params, fn->n_param);
                }
            }
            a->written = 1;
        }
        if (fn->role == ROLE_PROBED) kernel_ms *= env_double("EMUCUDA_PROBED_SLOWDOWN", 1.5);
    }
    if (getenv("EMUCUDA_VERBOSE"))
        fprintf(stderr, "[emucuda] launch %s (%s) grid %u %u %u block %u %u %u\n", fn->name,
                role_names[fn->role], gx, gy, gz, bx, by, bz);
    clock_ms += kernel_ms;
    launch_epoch++;
    return CUDA_SUCCESS;
}
