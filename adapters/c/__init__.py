"""The C implementation of spec/elmo.md: a program, `elmo-c`, that speaks the wire protocol (§15).

`build.build()` compiles it with the system C compiler and returns the executable's path; the
harness runs it as a process (`--impl 'cmd:PATH'`). The sources are the .c files beside this one,
one per spec section; README.md describes them.
"""
