//! Numbers as people read them in reports and notes: thousands separators, money to the cent.

/// `n` with thousands separators: `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A cost to the cent: `$1,234.57`; `—` when unknown.
pub fn dollars(cost: Option<f64>) -> String {
    match cost {
        None => "—".into(),
        Some(c) => {
            let cents = (c * 100.0).round() as u64;
            format!("${}.{:02}", thousands(cents / 100), cents % 100)
        }
    }
}
