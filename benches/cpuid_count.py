#!/usr/bin/env python3
"""Counts the `cpuid` instructions a program executes, by the function they are in.

    python3 benches/cpuid_count.py target/release/packc check examples/rfc0010-ex2.pack.yaml

In a virtual machine `cpuid` traps to the hypervisor, which can make each one cost
microseconds (see "The CLI's fixed cost" in benches/README.md). This finds every `cpuid`
in the executable with `objdump`, runs the program once under `gdb` with a breakpoint on
each (the program's standard output is discarded), and prints how often each function's
were hit. It needs `objdump` and `gdb`, and a position-dependent executable with symbols
(the addresses are read from the file, so a position-independent one is not counted); a
statically linked one shows the C library's start-up too, a dynamically linked one only
its own.
"""

import re
import shlex
import shutil
import subprocess
import sys
import tempfile


def sites(binary):
    """The address of every `cpuid` in `binary`, mapped to its function's name."""
    out = subprocess.run(
        ["objdump", "-d", "--no-show-raw-insn", binary],
        capture_output=True, text=True, check=True,
    ).stdout
    found, function = {}, "?"
    for line in out.splitlines():
        m = re.match(r"^([0-9a-f]+) <(.*)>:$", line)
        if m:
            function = m.group(2)
        elif "\tcpuid" in line:
            found[int(line.split(":")[0], 16)] = function
    return found


def hits(binary, args, where):
    """How often each address of `where` was hit in one run of `binary args`."""
    lines = ["set pagination off", "set confirm off"]
    for address in where:
        lines += [f"break *{address:#x}", "commands", "silent", "continue", "end"]
    lines += ["run " + " ".join(shlex.quote(a) for a in args) + " > /dev/null",
              "info breakpoints", "quit"]
    with tempfile.NamedTemporaryFile("w", suffix=".gdb") as script:
        script.write("\n".join(lines) + "\n")
        script.flush()
        out = subprocess.run(
            ["gdb", "-q", "-batch", "-x", script.name, binary],
            capture_output=True, text=True,
        ).stdout
    counts, current = {}, None
    for line in out.splitlines():
        m = re.match(r"^\d+\s+breakpoint\s+keep\s+y\s+(0x[0-9a-f]+)", line)
        if m:
            current = int(m.group(1), 16)
            continue
        m = re.search(r"already hit (\d+) time", line)
        if m and current is not None:
            counts[current] = int(m.group(1))
    return counts


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__.strip())
    binary, args = sys.argv[1], sys.argv[2:]
    for tool, package in (("objdump", "binutils"), ("gdb", "gdb")):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} is not on the PATH: install {package}")
    try:
        with open(binary, "rb") as f:
            header = f.read(18)
    except OSError as e:
        sys.exit(f"{binary}: {e.strerror}")
    if header[:4] != b"\x7fELF" or header[16:18] != b"\x02\x00":
        sys.exit(f"{binary}: not a position-dependent ELF executable (ELF type EXEC);"
                 " relink it with -C relocation-model=static (Rust) or -no-pie (C)")
    where = sites(binary)
    by_function = {}
    for address, n in hits(binary, args, where).items():
        by_function[where[address]] = by_function.get(where[address], 0) + n
    for function, n in sorted(by_function.items(), key=lambda item: -item[1]):
        print(f"{n:6}  {function}")
    print(f"{sum(by_function.values()):6}  in all ({len(where)} cpuid instructions in the file)")


if __name__ == "__main__":
    main()
