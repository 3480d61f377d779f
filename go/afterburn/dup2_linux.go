package afterburn

import "syscall"

// dup2 points newfd at oldfd's file; Linux on arm64 and riscv64 has only dup3.
func dup2(oldfd, newfd int) error { return syscall.Dup3(oldfd, newfd, 0) }
