// sim_main.cpp: runs one kernel over a grid on the CPU.
//
// Compiled once; linked with a kernel's object under -Wl,--defsym,sim_kernel=NAME, so the
// harness object is shared by every kernel. Usage: sim <input> <output> <kernel name>. The input holds ten int32 (M N K gx gy gz bx by bz
// shared_bytes), three int64 (the floats of A, B and C), then A and B; the output gets C, which starts
// as NaN. A config with a prologue (space.Prologue) is two runs: the prologue's, whose C is the workspace,
// then the kernel's, given that workspace as B. Each buffer is exactly as long as given, so ASan sees
// any float past it.
//
// Blocks run one after another. The threads of a block are fibers (sim_context.h) run in
// order, each as far as it can: a fiber switches out only at __syncthreads(), a shuffle or a failed
// mbarrier try. A barrier
// releases when every thread of the block waits at the same __syncthreads(); anything
// else (some threads exited, or wait at another call) is reported on stderr as
// "SIM-ERROR barrier: ..." with exit status 3. A thread that spins on an mbarrier (cuda_sim.h) yields
// at each failed try: the others run on, and a whole round of the block in which only spinning threads
// ran, and none of them saw a phase complete or any other mbarrier change, is a deadlock, the same
// error. A request the emulator does not model (__sim_fail in
// cuda_sim.h: a wgmma layout other than the one it knows) is "SIM-ERROR <kind>: ..." with status 5. A warp shuffle releases a warp's lanes once
// every one of them waits at a shuffle; a lane that never gets there is the same error. Memory errors are AddressSanitizer's.
//
// Built with -DSIM_BLAS, the harness runs BLAS=1 kernels (autotune/space/blas.py): after the ten
// int32 the input holds nine int64 (lda ldb ldc strideA strideB strideC, then the floats of the A,
// B and C buffers) and two float32 (alpha beta), then the A, B and C buffers; the output gets C's.
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <limits>
#include <sys/mman.h>
#include <vector>

#include "cuda_sim.h"
#include "sim_context.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define SIM_ASAN 1
#else
#define SIM_ASAN 0
#endif

#ifdef SIM_BLAS
extern "C" void sim_kernel(const float* A, const float* B, float* C, int M, int N, int K, int lda, int ldb, int ldc,
                           float alpha, float beta, long long strideA, long long strideB, long long strideC);
#else
extern "C" void sim_kernel(const float* A, const float* B, float* C, int M, int N, int K);
#endif

// extern __shared__ arrays point here (see cuda_sim.h): launch.shared_bytes on the heap,
// so ASan catches the first byte past the end.
float* __sim_dynamic_shared = nullptr;
size_t __sim_dynamic_bytes = 0;

uint3 threadIdx;
uint3 blockIdx;
dim3 blockDim;
dim3 gridDim;

namespace {

constexpr int kMaxThreads = 1024;
constexpr size_t kStackBytes = 256 * 1024;  // ASan frames are large; the tail is a guard page
constexpr size_t kGuardBytes = 4096;
constexpr int kBarrierExit = 3;
constexpr int kUsageExit = 4;
constexpr int kUnmodelledExit = 5;  // __sim_fail: the kernel asked for something the emulator does not model

enum class State { Runnable, Waiting, Shuffling, Done };

struct Fiber {
    SimContext ctx;
    char* stack = nullptr;  // lowest address; [stack, stack + kGuardBytes) is PROT_NONE
    uint3 tid{};
    State state = State::Runnable;
    int line = 0;      // source line of the __syncthreads() it waits at
    int barriers = 0;  // barriers passed so far in this block
    int shuffles = 0;  // shuffles passed so far: its parity picks the slot it publishes in
    void* fake_stack = nullptr;
};

struct Args {
    const float* A;
    const float* B;
    float* C;
    int M, N, K;
    int64_t blas[6];  // SIM_BLAS: lda ldb ldc strideA strideB strideC
    float alpha, beta;
};

SimContext g_sched;
std::vector<Fiber> g_fibers;
Fiber* g_cur = nullptr;
Args g_args;
float g_shuffled[2][kMaxThreads];  // [parity][thread]: the values of a warp's current shuffle
constexpr int kMaxGather = 16;
float g_gathered[2][kMaxThreads][kMaxGather];  // the same for a warp gather (__sim_warp_gather)
const char* g_name = "kernel";  // for messages
unsigned long g_mbarrier_events = 0;  // mbarrier changes so far (__sim_mbarrier_event): a spin's progress
const void* g_sched_bottom = nullptr;  // the scheduler's stack, for ASan's fiber API
size_t g_sched_size = 0;

// ASan must be told about every stack switch, or it reports false errors on the fibers.
void start_switch(void** fake, const void* bottom, size_t size) {
#if SIM_ASAN
    __sanitizer_start_switch_fiber(fake, bottom, size);
#endif
}

void finish_switch(void* fake, const void** bottom, size_t* size) {
#if SIM_ASAN
    __sanitizer_finish_switch_fiber(fake, bottom, size);
#endif
}

[[noreturn]] void fail(int code, const char* kind, const char* what) {
    std::fprintf(stderr, "SIM-ERROR %s: kernel %s: %s\n", kind, g_name, what);
    std::fflush(stderr);
    std::_Exit(code);
}

[[noreturn]] void block_fail(const char* what) {
    char msg[400];
    std::snprintf(msg, sizeof msg, "block (%u,%u,%u): %s", blockIdx.x, blockIdx.y, blockIdx.z, what);
    fail(kBarrierExit, "barrier", msg);
}

void fiber_main() {
    finish_switch(nullptr, &g_sched_bottom, &g_sched_size);
#ifdef SIM_BLAS
    const int64_t* x = g_args.blas;
    sim_kernel(g_args.A, g_args.B, g_args.C, g_args.M, g_args.N, g_args.K, int(x[0]), int(x[1]), int(x[2]), g_args.alpha,
               g_args.beta, x[3], x[4], x[5]);
#else
    sim_kernel(g_args.A, g_args.B, g_args.C, g_args.M, g_args.N, g_args.K);
#endif
    g_cur->state = State::Done;
    start_switch(nullptr, g_sched_bottom, g_sched_size);  // nullptr: this fiber is finished
    sim_swap(g_cur->ctx, g_sched);  // never comes back: the next block remakes the fiber
}

void resume(Fiber& f) {
    g_cur = &f;
    threadIdx = f.tid;
    void* fake = nullptr;
    start_switch(&fake, f.stack + kGuardBytes, kStackBytes - kGuardBytes);
    sim_swap(g_sched, f.ctx);
    finish_switch(fake, nullptr, nullptr);
}

char* map_stack() {
    void* p = mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) fail(kUsageExit, "usage", "cannot map fiber stacks");
    mprotect(p, kGuardBytes, PROT_NONE);  // a stack overflow faults instead of corrupting
    return static_cast<char*>(p);
}

void start_fiber(Fiber& f, uint3 tid) {
    if (!f.stack) f.stack = map_stack();
    // The stack is reused without clearing ASan's shadow: the kernel's frames all return
    // before a fiber finishes, and their epilogues unpoison their redzones.
    f.tid = tid;
    f.state = State::Runnable;
    f.line = 0;
    f.barriers = 0;
    f.shuffles = 0;
    sim_make(f.ctx, f.stack + kGuardBytes, kStackBytes - kGuardBytes, fiber_main);
}

// Releases every warp whose lanes all wait at a shuffle; true if it released any.
bool release_warps(int n) {
    bool released = false;
    for (int w = 0; w < n; w += warpSize) {
        const int end = std::min(n, w + warpSize);
        bool all = true;
        for (int i = w; i < end; ++i) all = all && g_fibers[i].state == State::Shuffling;
        for (int i = w; all && i < end; ++i) g_fibers[i].state = State::Runnable;
        released = released || all;
    }
    return released;
}

// Called when no fiber can run: either all wait at one barrier (release them) or the
// block is stuck, which on a GPU is a hang or undefined behaviour.
void release_barrier(int n) {
    int waiting = 0, done = 0;
    const Fiber* first = nullptr;
    for (int i = 0; i < n; ++i) {
        const Fiber& f = g_fibers[i];
        if (f.state == State::Done) ++done;
        if (f.state == State::Shuffling) {
            char msg[256];
            std::snprintf(msg, sizeof msg, "thread (%u,%u,%u) waits at a warp shuffle or __syncwarp that "
                          "lanes of its warp never reach", f.tid.x, f.tid.y, f.tid.z);
            block_fail(msg);
        }
        if (f.state != State::Waiting) continue;
        ++waiting;
        if (!first) first = &f;
        if (f.line != first->line) {
            char msg[256];
            std::snprintf(msg, sizeof msg,
                          "threads wait at different __syncthreads(): thread (%u,%u,%u) at line %d, "
                          "thread (%u,%u,%u) at line %d",
                          first->tid.x, first->tid.y, first->tid.z, first->line, f.tid.x, f.tid.y, f.tid.z,
                          f.line);
            block_fail(msg);
        }
    }
    if (done > 0) {
        char msg[256];
        std::snprintf(msg, sizeof msg,
                      "%d of %d threads exited while %d wait at __syncthreads() line %d "
                      "(barrier #%d of thread (%u,%u,%u))",
                      done, n, waiting, first->line, first->barriers + 1, first->tid.x, first->tid.y,
                      first->tid.z);
        block_fail(msg);
    }
    for (int i = 0; i < n; ++i) {
        g_fibers[i].state = State::Runnable;
        ++g_fibers[i].barriers;
    }
}

void run_block(uint3 block, dim3 dims) {
    blockIdx = block;
    // Every block starts with NaN in its dynamic shared memory, as a GPU's is undefined:
    // reading a word the block never wrote then shows in C.
    std::fill_n(reinterpret_cast<unsigned char*>(__sim_dynamic_shared), __sim_dynamic_bytes, 0xFF);
    const int n = static_cast<int>(dims.x * dims.y * dims.z);
    int i = 0;
    for (unsigned z = 0; z < dims.z; ++z)
        for (unsigned y = 0; y < dims.y; ++y)
            for (unsigned x = 0; x < dims.x; ++x) start_fiber(g_fibers[i++], uint3{x, y, z});
    for (int done_before = 0;;) {
        int done = 0, spinning = 0;
        const unsigned long events = g_mbarrier_events;
        for (int t = 0; t < n; ++t) {
            if (g_fibers[t].state == State::Runnable) resume(g_fibers[t]);
            done += g_fibers[t].state == State::Done;
            spinning += g_fibers[t].state == State::Runnable;  // parked by __sim_yield
        }
        if (done == n) return;
        if (release_warps(n)) continue;
        if (spinning == 0) release_barrier(n);
        else if (events == g_mbarrier_events && done == done_before)
            block_fail("threads spin at an mbarrier wait whose phase never completes (a deadlock on the GPU)");
        done_before = done;
    }
}

#if SIM_ASAN
// Runs when ASan is about to exit: say which block and thread made the access.
void on_asan_death() {
    std::fprintf(stderr, "SIM-CONTEXT block (%u,%u,%u) thread (%u,%u,%u)\n", blockIdx.x, blockIdx.y, blockIdx.z,
                 threadIdx.x, threadIdx.y, threadIdx.z);
    // So the report can say A, B or C rather than "a 4096-byte region".
    std::fprintf(stderr, "SIM-BUFFERS A=%p B=%p C=%p S=%p\n", static_cast<const void*>(g_args.A),
                 static_cast<const void*>(g_args.B), static_cast<const void*>(g_args.C),
                 static_cast<const void*>(__sim_dynamic_shared));
}
#endif

std::vector<float> read_floats(FILE* f, size_t count) {
    std::vector<float> v(count);
    if (std::fread(v.data(), sizeof(float), count, f) != count) fail(kUsageExit, "usage", "short input file");
    return v;
}

}  // namespace

namespace {

// Gives the CPU back to the scheduler until it resumes this fiber.
void park(Fiber& f, State state, int line) {
    f.state = state;
    f.line = line;
    start_switch(&f.fake_stack, g_sched_bottom, g_sched_size);
    sim_swap(f.ctx, g_sched);
    finish_switch(f.fake_stack, nullptr, nullptr);
}

}  // namespace

extern "C" void __sim_syncthreads(int line) { park(*g_cur, State::Waiting, line); }

// A failed mbarrier try: the others run before this thread tries again.
extern "C" void __sim_yield() { park(*g_cur, State::Runnable, 0); }
extern "C" void __sim_mbarrier_event() { ++g_mbarrier_events; }

// A warp meeting with nothing to exchange (__syncwarp): released with the warp's shuffles.
extern "C" void __sim_syncwarp() { park(*g_cur, State::Shuffling, 0); }

// Two slots per thread, alternating: a lane that runs on to its next shuffle writes the other
// slot, so the values of this one stay until every lane has read them (the next release).
extern "C" float __sim_shfl_xor(float v, int lane_mask, int width) {
    Fiber& f = *g_cur;
    const int me = static_cast<int>(&f - g_fibers.data()), lane = me % warpSize, parity = f.shuffles++ & 1;
    g_shuffled[parity][me] = v;
    park(f, State::Shuffling, 0);
    const int src = lane ^ lane_mask;
    // CUDA: a lane whose source lies in a later group of `width` lanes gets its own value.
    if (src / width > lane / width || me - lane + src >= static_cast<int>(g_fibers.size())) return v;
    return g_shuffled[parity][me - lane + src];
}

// A gather is a meeting like a shuffle (the same parity counter, so the two may interleave); every
// lane reads all of its warp's slots. It needs a whole warp: a partial one is an error, as an
// MMA in a partial warp is undefined on the GPU.
extern "C" void __sim_warp_gather(const float* mine, int count, float* all) {
    Fiber& f = *g_cur;
    const int me = static_cast<int>(&f - g_fibers.data()), first = me - me % warpSize, parity = f.shuffles++ & 1;
    if (count < 1 || count > kMaxGather) fail(kUsageExit, "usage", "a warp gather pools 1 to 16 floats a lane");
    if (first + warpSize > static_cast<int>(g_fibers.size())) block_fail("a warp-wide operation in a partial warp");
    std::memcpy(g_gathered[parity][me], mine, sizeof(float) * count);
    park(f, State::Shuffling, 0);
    for (int l = 0; l < warpSize; ++l) std::memcpy(all + l * count, g_gathered[parity][first + l], sizeof(float) * count);
}

extern "C" void __sim_fail(const char* kind, const char* what) {
    char msg[600];
    std::snprintf(msg, sizeof msg, "block (%u,%u,%u) thread (%u,%u,%u): %s", blockIdx.x, blockIdx.y, blockIdx.z,
                  threadIdx.x, threadIdx.y, threadIdx.z, what);
    fail(kUnmodelledExit, kind, msg);
}

int main(int argc, char** argv) {
    if (argc != 4) fail(kUsageExit, "usage", "usage: sim <input> <output> <kernel name>");
    g_name = argv[3];
#if SIM_ASAN
    __asan_set_death_callback(on_asan_death);
#endif
    FILE* in = std::fopen(argv[1], "rb");
    if (!in) fail(kUsageExit, "usage", std::strerror(errno));
    int32_t h[10];
    if (std::fread(h, sizeof h, 1, in) != 1) fail(kUsageExit, "usage", "short input header");
    const int M = h[0], N = h[1], K = h[2];
    gridDim = dim3{uint32_t(h[3]), uint32_t(h[4]), uint32_t(h[5])};
    blockDim = dim3{uint32_t(h[6]), uint32_t(h[7]), uint32_t(h[8])};
    if (M < 1 || N < 1 || K < 1) fail(kUsageExit, "usage", "M, N and K must be at least 1");
    const long threads = long(blockDim.x) * blockDim.y * blockDim.z;
    if (threads < 1 || threads > kMaxThreads) fail(kUsageExit, "usage", "block must have 1..1024 threads");

    // Exactly sized heap buffers: ASan puts a redzone right after each one.
#ifdef SIM_BLAS
    int64_t x[9];
    float ab[2];
    if (std::fread(x, sizeof x, 1, in) != 1 || std::fread(ab, sizeof ab, 1, in) != 1)
        fail(kUsageExit, "usage", "short BLAS header");
    std::vector<float> A = read_floats(in, size_t(x[6]));
    std::vector<float> B = read_floats(in, size_t(x[7]));
    std::vector<float> C = read_floats(in, size_t(x[8]));  // the caller's C: beta reads it, NaN shows the unwritten
    std::fclose(in);
    g_args = Args{A.data(), B.data(), C.data(), M, N, K, {x[0], x[1], x[2], x[3], x[4], x[5]}, ab[0], ab[1]};
#else
    int64_t sizes[3];  // floats of A, B and C: a prologue's C is its workspace, which the kernel then reads as B
    if (std::fread(sizes, sizeof sizes, 1, in) != 1 || sizes[0] < 0 || sizes[1] < 0 || sizes[2] < 0)
        fail(kUsageExit, "usage", "short or negative buffer sizes");
    std::vector<float> A = read_floats(in, size_t(sizes[0]));
    std::vector<float> B = read_floats(in, size_t(sizes[1]));
    std::fclose(in);
    std::vector<float> C(size_t(sizes[2]), std::numeric_limits<float>::quiet_NaN());  // unwritten shows
    g_args = Args{A.data(), B.data(), C.data(), M, N, K, {}, 1.0f, 0.0f};
#endif
    g_fibers.resize(threads);
    if (h[9] < 0) fail(kUsageExit, "usage", "dynamic shared memory size must not be negative");
    __sim_dynamic_bytes = size_t(h[9]);
    void* dynamic = nullptr;  // exactly shared_bytes, 16-aligned for float4 accesses
    if (__sim_dynamic_bytes && posix_memalign(&dynamic, 16, __sim_dynamic_bytes) != 0)
        fail(kUsageExit, "usage", "cannot allocate dynamic shared memory");
    __sim_dynamic_shared = static_cast<float*>(dynamic);

    // SIM_Z_DESCENDING set: the z blocks (split-K's splits) run last first, so a test can show that an
    // order-free reduction (RED=2) gives the same bytes whichever block of a pair arrives first. (The
    // turnstiles need the GPU's order, z ascending: under this one their waits never end.)
    // SIM_BLOCK_ORDER: "descending", every block last first; "shuffle:<seed>", the blocks in a random order
    // drawn from the seed (the same order for the same seed): for kernels whose blocks meet in any order
    // (stream-K's fixup). SIM_LAUNCHES=n: the grid is launched n times in this one process (module-level
    // __device__ arrays keep what the last launch left; a plain kernel's C is NaN again before each), and the output is
    // the last launch's C, so a test sees a counter that a launch fails to set back.
    const bool descending = std::getenv("SIM_Z_DESCENDING") != nullptr;
    std::vector<uint3> order;
    for (unsigned i = 0; i < gridDim.z; ++i) {
        const unsigned z = descending ? gridDim.z - 1 - i : i;
        for (unsigned y = 0; y < gridDim.y; ++y)
            for (unsigned x = 0; x < gridDim.x; ++x) order.push_back(uint3{x, y, z});
    }
    const char* how = std::getenv("SIM_BLOCK_ORDER");
    if (how && std::strcmp(how, "descending") == 0) {
        std::reverse(order.begin(), order.end());
    } else if (how && std::strncmp(how, "shuffle:", 8) == 0) {
        unsigned long long state = std::strtoull(how + 8, nullptr, 10) * 2862933555777941757ull + 3037000493ull;
        for (size_t i = order.size(); i > 1; --i) {  // Fisher-Yates with a 64-bit LCG
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            std::swap(order[i - 1], order[size_t((state >> 33) % i)]);
        }
    } else if (how && *how) {
        fail(kUsageExit, "usage", "SIM_BLOCK_ORDER must be descending or shuffle:<seed>");
    }
    const char* launches_text = std::getenv("SIM_LAUNCHES");
    const long launches = launches_text ? std::strtol(launches_text, nullptr, 10) : 1;
    if (launches < 1) fail(kUsageExit, "usage", "SIM_LAUNCHES must be at least 1");
    for (long launch = 0; launch < launches; ++launch) {
#ifndef SIM_BLAS
        if (launch > 0) std::fill(C.begin(), C.end(), std::numeric_limits<float>::quiet_NaN());
#endif
        for (const uint3& block : order) run_block(block, blockDim);
    }

    FILE* out = std::fopen(argv[2], "wb");
    if (!out || std::fwrite(C.data(), sizeof(float), C.size(), out) != C.size()) fail(kUsageExit, "usage", "cannot write output");
    std::fclose(out);
    return 0;
}
