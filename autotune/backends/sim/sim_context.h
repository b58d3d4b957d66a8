// sim_context.h: switching between fiber stacks, for sim_main.cpp.
//
// On x86-64 a few instructions save the callee-saved registers and swap stacks. That is
// ~50x faster than swapcontext, which makes a system call to save the signal mask, and
// AddressSanitizer's swapcontext interceptor also wipes the shadow of the stack it
// switches to, which would hide overflows of a kernel's local arrays after its first
// barrier. Elsewhere we fall back to ucontext.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__x86_64__)

struct SimContext {
    void* sp = nullptr;
};

// sim_switch(save, to): saves this stack's registers, stores its sp in *save, resumes `to`.
extern "C" void sim_switch(void** save, void* to);
asm(R"(
    .text
    .globl sim_switch
    .type sim_switch, @function
sim_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $8, %rsp
    stmxcsr (%rsp)
    fnstcw 4(%rsp)
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    ldmxcsr (%rsp)
    fldcw 4(%rsp)
    addq $8, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size sim_switch, .-sim_switch
)");

inline void sim_swap(SimContext& from, SimContext& to) { sim_switch(&from.sp, to.sp); }

// Lays out a stack as sim_switch would have left it, returning into entry (which must
// never return). Registers start at zero; rbp = 0 ends a debugger's or ASan's unwinding.
inline void sim_make(SimContext& c, char* stack, size_t size, void (*entry)()) {
    auto top = reinterpret_cast<uintptr_t>(stack + size) & ~uintptr_t(15);
    auto* slot = reinterpret_cast<uint64_t*>(top);
    *--slot = 0;                                     // entry's return address: none
    *--slot = reinterpret_cast<uint64_t>(entry);     // where sim_switch's ret goes
    for (int i = 0; i < 6; ++i) *--slot = 0;         // rbp rbx r12 r13 r14 r15
    *--slot = 0x1F80ull | (0x037Full << 32);         // default MXCSR, x87 control word
    c.sp = slot;
}

#else

#include <ucontext.h>

struct SimContext {
    ucontext_t uc;
};

inline void sim_swap(SimContext& from, SimContext& to) { swapcontext(&from.uc, &to.uc); }

inline void sim_make(SimContext& c, char* stack, size_t size, void (*entry)()) {
    getcontext(&c.uc);
    c.uc.uc_stack.ss_sp = stack;
    c.uc.uc_stack.ss_size = size;
    c.uc.uc_link = nullptr;
    makecontext(&c.uc, entry, 0);
}

#endif
