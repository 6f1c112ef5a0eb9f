/* Start-up code for a Cortex-M4 with FPU: the vector table and a reset handler that prepares
 * what C needs (FPU on, .data copied, .bss zeroed, semihosting opened), then runs main.
 * newlib's own start-up is not used: it takes the stack from a semihosting call that points
 * outside the MPS2 board's RAM. */
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

extern uint32_t __stack_top[], __data_start[], __data_end[], __data_load[], __bss_start[],
    __bss_end[];

int main(void);
void initialise_monitor_handles(void);
void reset_handler(void);
void fault_handler(void);
void _init(void);
void _fini(void);

#define CPACR (*(volatile uint32_t *)0xE000ED88u)

void reset_handler(void) {
    /* Full access to coprocessors 10 and 11 (the FPU) before any float instruction runs. */
    CPACR |= 0xFu << 20;
    __asm__ volatile("dsb\n\tisb" ::: "memory");
    for (uint32_t *src = __data_load, *dst = __data_start; dst < __data_end;)
        *dst++ = *src++;
    for (uint32_t *dst = __bss_start; dst < __bss_end;)
        *dst++ = 0;
    initialise_monitor_handles();
    exit(main());
}

/* A fault ends the emulation with a failure status instead of hanging it. */
void fault_handler(void) {
    _exit(3);
}

/* newlib calls these around main; nothing to do here. */
void _init(void) {}
void _fini(void) {}

/* Initial stack pointer, then the exception handlers: reset, NMI, hard, memory-management,
 * bus and usage faults. Interrupts are not used. */
__attribute__((section(".vectors"), used)) static void (*const vectors[])(void) = {
    (void (*)(void))__stack_top,
    reset_handler,
    fault_handler,
    fault_handler,
    fault_handler,
    fault_handler,
    fault_handler,
};
