//go:build linux && arm64

package seccomp

// commandProgram is empty on arm64: Build assembles the program from its
// rules at run time. A generated copy would have to be produced by code
// built for arm64 (the rules use the architecture's constants), which the
// development host cannot run.
const commandProgram = ""
