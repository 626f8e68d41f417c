//! Evaluates the benchmark predicates (`benches/vm.rs`, group `vm_pred`) many times, for
//! callgrind: `cargo run --release -p packc-vm --example pred_profile -- <compare|any_of> <n>`.

use packc_suite::workloads;
use packc_vm::internals::Compiled;

fn main() {
    let mut args = std::env::args().skip(1);
    let which = args.next().unwrap_or_else(|| "compare".to_owned());
    let n: usize = args.next().map_or(1, |n| n.parse().expect("a count"));
    let input = workloads::pred_input();
    let pred = match which.as_str() {
        "compare" => workloads::compare_pred(),
        _ => workloads::any_of_pred(),
    };
    let compiled = Compiled::new(&pred);
    let mut trues = 0;
    for _ in 0..n {
        if compiled.eval_input(std::hint::black_box(&input)) == Ok(true) {
            trues += 1;
        }
    }
    println!("{trues} of {n} true");
}
