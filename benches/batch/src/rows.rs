//! The input rows: JSON Lines of RFC 0010 example 2's input, `{"id", "text"}`.
//!
//! Even rows are research papers (their text has an `Abstract:`, so the mock classifies
//! them `research_paper` and the branch takes `extract_paper`), odd rows are notices
//! (`general`, then `extract_general`). Each row's text names its number, so no two
//! requests are the same. Every row makes exactly two model calls.

use std::io::Write;

/// Writes `count` rows to `out`, one JSON object a line.
pub fn write(count: usize, out: &mut impl Write) -> std::io::Result<()> {
    for n in 0..count {
        let text = if n % 2 == 0 {
            format!(
                "Deep Residual Learning for Image Recognition, part {n}. Kaiming He, Xiangyu Zhang, Shaoqing Ren, Jian Sun. Abstract: We present a residual learning framework that eases the training of substantially deeper networks."
            )
        } else {
            format!(
                "Maintenance notice {n}: the Berlin data center will be offline on 14 September from 02:00 to 04:00 CET for a power upgrade."
            )
        };
        let row = serde_json::json!({"id": format!("row-{n:06}"), "text": text});
        writeln!(out, "{row}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn rows_alternate_papers_and_notices() {
        let mut out = Vec::new();
        super::write(4, &mut out).unwrap();
        let rows: Vec<serde_json::Value> = String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(rows.len(), 4);
        assert_eq!(rows[3]["id"], "row-000003");
        let papers: Vec<bool> = rows
            .iter()
            .map(|r| r["text"].as_str().unwrap().contains("Abstract"))
            .collect();
        assert_eq!(papers, [true, false, true, false]);
    }
}
