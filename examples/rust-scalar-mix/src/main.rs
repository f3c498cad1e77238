//! rust-scalar-mix: ScalarMix (spec/elmo.md §5) and its gradient (§6.3) in Rust, std only,
//! speaking the wire protocol of §15 on standard input and output.
//!
//! It declares the component `scalar_mix` (§11), so the suite checks ScalarMix only and reports
//! the biLM and the probe as not implemented; every other function is answered with an error of
//! kind `NotImplemented`. Float64 and float32 are computed in their own arithmetic (§1.2).
//!
//!     cargo build --release --offline
//!     elmo-conformance --impl 'cmd:target/release/rust-scalar-mix'

mod scalar_mix;
mod wire;

use std::io::{self, BufReader, BufWriter, Write};
use std::process::ExitCode;

use scalar_mix::{check, check_g_out, Mix};
use wire::{Frame, Out, Value};

const PROTOCOL: &str = "1.0";
const CAPABILITIES: [&str; 4] = ["float64", "float32", "grad", "scalar_mix"];

/// §15.4: name, capabilities and (no) declared mutants.
fn hello() -> Out {
    let mut out = Out::default();
    out.map(7);
    out.key("type");
    out.text("hello");
    out.key("protocol");
    out.text(PROTOCOL);
    out.key("name");
    out.text("rust-scalar-mix");
    out.key("capabilities");
    out.list(CAPABILITIES.len());
    for capability in CAPABILITIES {
        out.text(capability);
    }
    out.key("device");
    out.text("cpu");
    out.key("unavailable");
    out.null();
    out.key("mutants");
    out.list(0);
    out
}

/// §15.6: an error answer; `id` null when the request's id could not be read.
fn error(id: Option<i64>, kind: &str, message: &str) -> Out {
    let mut out = Out::default();
    out.map(4);
    out.key("type");
    out.text("error");
    out.key("id");
    match id {
        Some(id) => out.int(id),
        None => out.null(),
    }
    out.key("kind");
    out.text(kind);
    out.key("message");
    out.text(message);
    out
}

/// A result answer's start (§15.5); the value follows.
fn result(id: i64) -> Out {
    let mut out = Out::default();
    out.map(3);
    out.key("type");
    out.text("result");
    out.key("id");
    out.int(id);
    out.key("value");
    out
}

/// Whether a call computes in float32 (float32 layers) rather than float64 (§1.2).
fn single(mix: &Mix) -> bool {
    &mix.layers[0].dtype == b"f4"
}

/// One call (§15.5): a result, or an error of kind ValueError naming the argument (§8).
fn call(id: i64, function: &str, args: &Value) -> Out {
    let arguments: &[&str] = match function {
        "scalar_mix" => &["s", "gamma", "layers"],
        "scalar_mix_vjp" => &["s", "gamma", "layers", "g_out"],
        _ => &[],
    };
    if let Some(missing) = arguments.iter().find(|name| args.get(name).is_none()) {
        return error(Some(id), "ProtocolError", &format!("{function}: 'args' lacks the argument '{missing}' (§15.5)"));
    }
    let mix = match function {
        "scalar_mix" | "scalar_mix_vjp" => check(args),
        _ => return error(Some(id), "NotImplemented", &format!("{function}: only ScalarMix is implemented (§11)")),
    };
    let mix = match mix {
        Ok(mix) => mix,
        Err(message) => return error(Some(id), "ValueError", &message),
    };
    let mut out = result(id);
    if function == "scalar_mix" {
        if single(&mix) {
            scalar_mix::scalar_mix::<f32>(&mix, &mut out);
        } else {
            scalar_mix::scalar_mix::<f64>(&mix, &mut out);
        }
        return out;
    }
    let g_out = match check_g_out(args, &mix) {
        Ok(g_out) => g_out,
        Err(message) => return error(Some(id), "ValueError", &message),
    };
    if single(&mix) {
        scalar_mix::scalar_mix_vjp::<f32>(&mix, g_out, &mut out);
    } else {
        scalar_mix::scalar_mix_vjp::<f64>(&mix, g_out, &mut out);
    }
    out
}

/// One request: a hello (§15.4) or a call (§15.5); anything else is a ProtocolError.
fn answer(request: &Value) -> Out {
    let id = match request.get("id") {
        Some(Value::Int(id)) => Some(*id),
        _ => None,
    };
    match request.get("type").and_then(Value::text) {
        Some("hello") => hello(),
        Some("call") => {
            let (Some(id), Some(function), Some(args @ Value::Map(_))) =
                (id, request.get("function").and_then(Value::text), request.get("args"))
            else {
                return error(id, "ProtocolError", "a call needs an integer 'id', a string 'function' and a map 'args'");
            };
            match request.get("mutant") {
                None | Some(Value::Null) => call(id, function, args),
                Some(other) => error(
                    Some(id),
                    "UnknownMutant",
                    &format!("this program declares no mutant, got {}", other.describe()),
                ),
            }
        }
        _ => error(id, "ProtocolError", "expected a message of type 'hello' or 'call' (§15.4, §15.5)"),
    }
}

fn main() -> ExitCode {
    let mut input = BufReader::new(io::stdin().lock());
    let mut output = BufWriter::new(io::stdout().lock());
    loop {
        let out = match wire::read_frame(&mut input) {
            Frame::End => return ExitCode::SUCCESS,
            Frame::Broken(why) => {
                // No way to find the next frame (§15.6): say why, and exit non-zero.
                let _ = error(None, "ProtocolError", &why).send(&mut output);
                let _ = writeln!(io::stderr(), "rust-scalar-mix: {why}");
                return ExitCode::FAILURE;
            }
            Frame::Body(body) => match wire::decode(&body) {
                Ok(request @ Value::Map(_)) => answer(&request),
                Ok(other) => error(None, "ProtocolError", &format!("a request must be a map, got {}", other.describe())),
                Err(why) => error(None, "ProtocolError", &format!("cannot decode the request: {why}")),
            },
        };
        if out.send(&mut output).is_err() {
            return ExitCode::FAILURE; // standard output is gone: the harness has stopped
        }
    }
}
