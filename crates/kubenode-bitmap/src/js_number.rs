//! A double printed as JavaScript's `Number.prototype.toString` prints it, so a range message
//! built here reads exactly as the same message built in JS would (`Infinity`, not `inf`;
//! `1e+21`, not `1000000000000000000000`).

use std::fmt;

/// Displays its double the way JavaScript's `String(n)` does.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JsNumber(pub f64);

impl fmt::Display for JsNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0;
        if v.is_nan() {
            return f.write_str("NaN");
        }
        if v.is_infinite() {
            return f.write_str(if v > 0.0 { "Infinity" } else { "-Infinity" });
        }
        if v == 0.0 {
            // JS prints -0 as "0".
            return f.write_str("0");
        }
        let (digits, exp) = shortest_digits(v.abs());
        if v < 0.0 {
            f.write_str("-")?;
        }
        layout(f, &digits, exp + 1)
    }
}

/// The fewest significant digits that read back as `v`, and the decimal exponent of the first.
/// Rust's `{:e}` finds how many digits are needed; when two such strings read back (a tie, as
/// for ...294.25 at 16 digits), ECMAScript takes the one closest to `v`, ties to even, which is
/// exactly the correctly rounded `{:.N e}`, so that is printed again at that length.
fn shortest_digits(v: f64) -> (String, i32) {
    let split = |sci: &str| -> (String, i32) {
        let (mantissa, exp) = sci.split_once('e').unwrap_or((sci, "0"));
        let digits = mantissa.chars().filter(char::is_ascii_digit).collect();
        (digits, exp.parse().unwrap_or(0))
    };
    let shortest = format!("{v:e}");
    let (digits, exp) = split(&shortest);
    let nearest = format!("{v:.*e}", digits.len().saturating_sub(1));
    // The nearest can miss only where the gap below a power of two is half the gap above.
    if nearest.parse::<f64>() == Ok(v) {
        return split(&nearest);
    }
    (digits, exp)
}

/// ECMAScript Number::toString steps for digits `s` (k of them) and decimal point position `n`
/// (the value is `0.s × 10^n`).
fn layout(f: &mut fmt::Formatter<'_>, s: &str, n: i32) -> fmt::Result {
    let k = s.len() as i32;
    if k <= n && n <= 21 {
        f.write_str(s)?;
        return write_zeros(f, n - k);
    }
    if 0 < n && n <= 21 {
        let (int, frac) = s.split_at(n as usize);
        return write!(f, "{int}.{frac}");
    }
    if -6 < n && n <= 0 {
        f.write_str("0.")?;
        write_zeros(f, -n)?;
        return f.write_str(s);
    }
    let (first, rest) = s.split_at(1);
    f.write_str(first)?;
    if !rest.is_empty() {
        write!(f, ".{rest}")?;
    }
    let e = n - 1;
    write!(f, "e{}{}", if e < 0 { '-' } else { '+' }, e.abs())
}

fn write_zeros(f: &mut fmt::Formatter<'_>, count: i32) -> fmt::Result {
    for _ in 0..count {
        f.write_str("0")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::JsNumber;

    /// Outputs of `node -e 'console.log(String(v))'` for each value.
    const TABLE: &[(f64, &str)] = &[
        (f64::NAN, "NaN"),
        (f64::INFINITY, "Infinity"),
        (f64::NEG_INFINITY, "-Infinity"),
        (0.0, "0"),
        (-0.0, "0"),
        (1.0, "1"),
        (-1.0, "-1"),
        (1.5, "1.5"),
        (0.1, "0.1"),
        (0.30000000000000004, "0.30000000000000004"),
        (4294967297.0, "4294967297"),
        (9007199254740992.0, "9007199254740992"),
        (9007199254740993.0, "9007199254740992"),
        (1e20, "100000000000000000000"),
        (123456789012345680000.0, "123456789012345680000"),
        (1e21, "1e+21"),
        (-1e21, "-1e+21"),
        (1.5e300, "1.5e+300"),
        (f64::MAX, "1.7976931348623157e+308"),
        (1e-6, "0.000001"),
        (1.5e-6, "0.0000015"),
        (1e-7, "1e-7"),
        (-1.25e-7, "-1.25e-7"),
        (5e-324, "5e-324"),
        (f64::MIN_POSITIVE, "2.2250738585072014e-308"),
        (123.456, "123.456"),
        (0.000123, "0.000123"),
        (2f64 * 4294967296.0 + 5.0, "8589934597"),
        // -1772272452103294.25, a tie between two shortest strings: JS takes the even one.
        (-1_772_272_452_103_294.2, "-1772272452103294.2"),
    ];

    #[test]
    fn prints_as_javascript_does() {
        for (v, want) in TABLE {
            assert_eq!(JsNumber(*v).to_string(), *want, "{v:?}");
        }
    }

    /// Random doubles (every bit pattern equally likely, so all exponents show up) printed by
    /// node itself, when node is on PATH.
    #[test]
    fn matches_node_over_random_doubles() {
        use std::io::Write;
        use std::process::{Command, Stdio};

        let mut rng = crate::SplitMix64::new(0x6b75_6265);
        let values: Vec<f64> = (0..20_000)
            .map(|i| {
                let bits = rng.next_u64();
                // Every fourth value is an integer-ish double, where the plain/exponent switch is.
                if i % 4 == 0 {
                    (f64::from_bits(bits) % 1e23).trunc()
                } else {
                    f64::from_bits(bits)
                }
            })
            .collect();
        let script = "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>{\
            const b=Buffer.from(s,'hex');const o=[];\
            for(let i=0;i<b.length;i+=8)o.push(String(b.readDoubleLE(i)));\
            process.stdout.write(o.join('\\n'))})";
        let Ok(mut child) = Command::new("node")
            .args(["-e", script])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
        else {
            eprintln!("node not found; differential check skipped");
            return;
        };
        let hex: String = values
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .map(|b| format!("{b:02x}"))
            .collect();
        child
            .stdin
            .take()
            .expect("piped stdin")
            .write_all(hex.as_bytes())
            .expect("write to node");
        let out = child.wait_with_output().expect("node output");
        let text = String::from_utf8(out.stdout).expect("utf-8");
        let lines: Vec<&str> = text.split('\n').collect();
        assert_eq!(lines.len(), values.len());
        for (v, js) in values.iter().zip(lines) {
            assert_eq!(JsNumber(*v).to_string(), js, "bits {:#x}", v.to_bits());
        }
    }
}
