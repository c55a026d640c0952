//! The `quarry` binary: all the work is in the library's `cli` module.

fn main() -> std::process::ExitCode {
    quarry::cli::main()
}
