//! The packc virtual machine: loads a verified artifact and runs it sans-IO,
//! yielding host calls (model calls, tool calls, the clock) and taking their answers back.
