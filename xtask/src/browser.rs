//! `cargo xtask check-report [PATH]`: loads the HTML report (default `target/bke-report/index.html`)
//! in headless Chromium through ChromeDriver (W3C WebDriver over plain HTTP on localhost; Debian's
//! `chromium` and `chromium-driver`, installed by `scripts/install-chromium.sh`) and checks that it
//! renders: no console error, every `<figure>` of the file present in the page with a non-empty SVG
//! (visible size, drawn marks, text), and that a reader can read each figure:
//!
//! * at least two distinct tick labels on each axis (numbers drawn right-aligned left of the plot: y;
//!   centred below it: x), and at least two y tick labels inside the range a figure declares as the
//!   one that decides (`data-focus-y="lo hi"` on its `<svg>`), so that a zoom is readable; a diagram
//!   without axes says so (`data-axes="none"`);
//! * no band leaves the support it declares (`data-support="lo hi"` on its `<polygon>`, bounds may be
//!   `inf`): the band's vertices are read off the y tick labels, as a reader would read them;
//! * no rerun command block scrolls horizontally (long commands wrap).
//!
//! Saves a full-page PNG screenshot beside the report (`screenshot.png`).

use anyhow::{Context, bail, ensure};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Chromium's flags that work headless, as root, on a machine without network.
const CHROMIUM_FLAGS: [&str; 9] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
];

/// The page's tallest screenshot (pixels); taller pages are cut there.
const MAX_SHOT_HEIGHT: u64 = 16_000;

/// Measures the page: figures, the ones that are empty, its height, whether the font loaded.
const PROBE: &str = r#"
const figs = [...document.querySelectorAll('figure')];
const bad = [];
const num = s => { const t = s.trim().replace(/\u2212/g, '-');
  return /^-?[0-9]*\.?[0-9]+(e-?[0-9]+)?$/.test(t) ? parseFloat(t) : NaN; };
const bound = s => s === 'inf' ? Infinity : s === '-inf' ? -Infinity : parseFloat(s);
const distinct = l => new Set(l.map(t => t.v)).size;
// The value at pixel row py read off the y tick labels: linear, or log-10 when that fits them better.
const reader = yt => {
  const s = [...yt].sort((a, b) => a.y - b.y), a = s[0], b = s[s.length - 1];
  const lin = py => a.v + (py - a.y) * (b.v - a.v) / (b.y - a.y);
  if (!yt.every(t => t.v > 0)) return lin;
  const lg = py => Math.pow(10, Math.log10(a.v) + (py - a.y) * (Math.log10(b.v) - Math.log10(a.v)) / (b.y - a.y));
  const err = f => s.reduce((e, t) => e + Math.abs(Math.log(f(t.y) / t.v)), 0);
  return err(lg) < err(lin) ? lg : lin;
};
figs.forEach((f, i) => {
  const s = f.querySelector('svg');
  const cap = (f.querySelector('figcaption') || {}).textContent || '';
  if (!s) { bad.push(`figure ${i + 1}: no svg (${cap.slice(0, 60)})`); return; }
  const b = s.getBoundingClientRect();
  const marks = s.querySelectorAll('polyline, path, polygon, circle, rect, line').length;
  const texts = s.querySelectorAll('text').length;
  if (b.width < 200 || b.height < 150 || marks < 5 || texts < 3)
    bad.push(`figure ${i + 1}: ${Math.round(b.width)}x${Math.round(b.height)} px, ${marks} marks, ${texts} texts (${cap.slice(0, 60)})`);
  if (s.getAttribute('data-axes') === 'none') return;
  const ticks = [...s.querySelectorAll('text')].filter(t => !t.getAttribute('transform')).map(t => {
    const r = t.getBBox();
    return { a: t.getAttribute('text-anchor'), v: num(t.textContent), y: r.y + r.height / 2 };
  }).filter(t => isFinite(t.v));
  const yt = ticks.filter(t => t.a === 'end'), xt = ticks.filter(t => t.a === 'middle');
  if (distinct(xt) < 2 || distinct(yt) < 2)
    bad.push(`figure ${i + 1}: ${distinct(xt)} x and ${distinct(yt)} y tick label(s), fewer than two on an axis (${cap.slice(0, 60)})`);
  const focus = s.getAttribute('data-focus-y');
  if (focus) {
    const [lo, hi] = focus.split(' ').map(bound);
    const n = distinct(yt.filter(t => t.v >= lo && t.v <= hi));
    if (n < 2) bad.push(`figure ${i + 1}: ${n} y tick label(s) in its declared range [${focus}], fewer than two (${cap.slice(0, 60)})`);
  }
  if (distinct(yt) < 2) return;
  const value = reader(yt), span = Math.max(...yt.map(t => t.v)) - Math.min(...yt.map(t => t.v));
  s.querySelectorAll('polygon[data-support]').forEach(p => {
    const [lo, hi] = p.getAttribute('data-support').split(' ').map(bound);
    const vs = [...p.points].map(q => value(q.y));
    const [vmin, vmax] = [Math.min(...vs), Math.max(...vs)];
    if (vmin < lo - 0.005 * span || vmax > hi + 0.005 * span)
      bad.push(`figure ${i + 1}: its band reaches ${vmin.toPrecision(3)} to ${vmax.toPrecision(3)}, outside its declared support [${lo}, ${hi}] (${cap.slice(0, 60)})`);
  });
});
document.querySelectorAll('pre').forEach((p, i) => {
  if (p.scrollWidth > p.clientWidth + 1)
    bad.push(`rerun block ${i + 1} scrolls horizontally (${p.scrollWidth} px of content in ${p.clientWidth} px)`);
});
return { figures: figs.length, bad: bad, sections: document.querySelectorAll('section').length,
         height: document.documentElement.scrollHeight, font: document.fonts.check('12px "DejaVu Sans"') };
"#;

/// Finds `name` on `PATH`.
fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?.to_str()?.split(':').map(|d| Path::new(d).join(name)).find(|p| p.is_file())
}

/// Runs the check on `page`.
pub fn check(page: &Path) -> anyhow::Result<()> {
    let page = page
        .canonicalize()
        .with_context(|| format!("no report at {} (run `cargo xtask demo` first)", page.display()))?;
    let chromium = which("chromium").or_else(|| which("chromium-browser"));
    let driver = which("chromedriver");
    let (Some(chromium), Some(driver)) = (chromium, driver) else {
        bail!(
            "chromium and chromedriver are not installed: run `bash scripts/install-chromium.sh` (Debian packages)"
        );
    };
    let html = std::fs::read_to_string(&page)?;
    let expected = html.matches("<figure>").count();
    let profile = std::env::temp_dir().join(format!("bke-chromium-{}", std::process::id()));
    let port = free_port()?;
    let mut child = Command::new(&driver)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("starting {}", driver.display()))?;
    let result = drive(port, &chromium, &profile, &page, expected);
    stop(&mut child);
    let _ = std::fs::remove_dir_all(&profile);
    let (probe, shot) = result?;
    println!(
        "browser check passed: {} section(s), {} figure(s) rendered, no console errors, page height {} px; screenshot {}",
        probe["sections"],
        probe["figures"],
        probe["height"],
        shot.display()
    );
    Ok(())
}

fn stop(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// The WebDriver session: load, probe, read the console log, screenshot.
fn drive(
    port: u16,
    chromium: &Path,
    profile: &Path,
    page: &Path,
    expected: usize,
) -> anyhow::Result<(Value, PathBuf)> {
    let start = Instant::now();
    while http(port, "GET", "/status", None).map_or(true, |v| v["value"]["ready"] != json!(true)) {
        ensure!(start.elapsed() < Duration::from_secs(20), "chromedriver did not become ready in 20 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut args: Vec<String> = CHROMIUM_FLAGS.iter().map(|s| s.to_string()).collect();
    args.push(format!("--user-data-dir={}", profile.display()));
    args.push("--window-size=1280,1000".into());
    let caps = json!({"capabilities": {"alwaysMatch": {
        "browserName": "chrome",
        "goog:chromeOptions": {"binary": chromium, "args": args},
        "goog:loggingPrefs": {"browser": "ALL"},
    }}});
    let session = http(port, "POST", "/session", Some(&caps))?;
    let id = session["value"]["sessionId"].as_str().context("no session id from chromedriver")?.to_string();
    let outcome = session_checks(port, &id, page, expected);
    let _ = http(port, "DELETE", &format!("/session/{id}"), None);
    outcome
}

fn session_checks(port: u16, id: &str, page: &Path, expected: usize) -> anyhow::Result<(Value, PathBuf)> {
    let s = |p: &str| format!("/session/{id}{p}");
    http(port, "POST", &s("/url"), Some(&json!({"url": format!("file://{}", page.display())})))?;
    let probe =
        http(port, "POST", &s("/execute/sync"), Some(&json!({"script": PROBE, "args": []})))?["value"]
            .clone();
    let log = http(port, "POST", &s("/se/log"), Some(&json!({"type": "browser"})))?["value"].clone();
    let errors: Vec<String> = log
        .as_array()
        .context("chromedriver returned no browser log")?
        .iter()
        .filter(|e| e["level"] == json!("SEVERE"))
        .map(|e| e["message"].as_str().unwrap_or("?").to_string())
        .collect();
    ensure!(errors.is_empty(), "console errors:\n  {}", errors.join("\n  "));
    let bad: Vec<String> =
        probe["bad"].as_array().map_or(vec![], |a| a.iter().map(|v| v.to_string()).collect());
    ensure!(bad.is_empty(), "the page fails {} check(s):\n  {}", bad.len(), bad.join("\n  "));
    let shown = probe["figures"].as_u64().unwrap_or(0) as usize;
    ensure!(shown == expected, "the page shows {shown} figures, the file has {expected}");
    ensure!(expected > 0 || probe["sections"].as_u64().unwrap_or(0) > 0, "the report is empty");
    if probe["font"] != json!(true) {
        eprintln!("note: the embedded DejaVu Sans face did not load; figures use a fallback font");
    }
    let height = probe["height"].as_u64().unwrap_or(1000).clamp(600, MAX_SHOT_HEIGHT);
    http(port, "POST", &s("/window/rect"), Some(&json!({"width": 1280, "height": height})))?;
    let png =
        http(port, "GET", &s("/screenshot"), None)?["value"].as_str().context("no screenshot")?.to_string();
    let shot = page.with_file_name("screenshot.png");
    std::fs::write(&shot, base64_decode(&png)?)?;
    Ok((probe, shot))
}

/// One HTTP/1.1 request to chromedriver on localhost; the JSON body of the answer. WebDriver errors
/// (`value.error`) become errors.
fn http(port: u16, method: &str, path: &str, body: Option<&Value>) -> anyhow::Result<Value> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(120)))?;
    let body = body.map(Value::to_string).unwrap_or_default();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    let (head, payload) = read_answer(&mut stream)?;
    ensure!(!payload.is_empty(), "{method} {path}: {}", head.lines().next().unwrap_or("no answer"));
    let v: Value =
        serde_json::from_slice(&payload).with_context(|| format!("{method} {path}: answer is not JSON"))?;
    if let Some(err) = v["value"]["error"].as_str() {
        bail!("{method} {path}: {err}: {}", v["value"]["message"].as_str().unwrap_or(""));
    }
    Ok(v)
}

/// Reads one HTTP answer: the lower-cased head and the body (by Content-Length, chunked, or to the
/// end of the stream). ChromeDriver keeps connections open, so the body's length must be respected.
fn read_answer(stream: &mut TcpStream) -> anyhow::Result<(String, Vec<u8>)> {
    let mut raw = Vec::new();
    let mut buf = [0u8; 65536];
    let split = loop {
        if let Some(i) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let n = stream.read(&mut buf)?;
        ensure!(n > 0, "the connection closed before the answer's head");
        raw.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&raw[..split]).to_ascii_lowercase();
    let mut body = raw[split + 4..].to_vec();
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok());
    let chunked = head.lines().any(|l| l.starts_with("transfer-encoding:") && l.contains("chunked"));
    loop {
        let done = match length {
            Some(n) => body.len() >= n,
            None if chunked => body.windows(5).any(|w| w == b"0\r\n\r\n"),
            None => false,
        };
        if done {
            break;
        }
        let n = stream.read(&mut buf)?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&buf[..n]);
    }
    if chunked {
        body = dechunk(&body)?;
    }
    Ok((head, body))
}

fn dechunk(mut b: &[u8]) -> anyhow::Result<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let eol = b.windows(2).position(|w| w == b"\r\n").context("bad chunk")?;
        let size = usize::from_str_radix(String::from_utf8_lossy(&b[..eol]).trim(), 16)?;
        if size == 0 {
            return Ok(out);
        }
        out.extend_from_slice(b.get(eol + 2..eol + 2 + size).context("short chunk")?);
        b = b.get(eol + 4 + size..).unwrap_or(&[]);
    }
}

/// Standard base64 (RFC 4648) decoding.
fn base64_decode(s: &str) -> anyhow::Result<Vec<u8>> {
    let val = |c: u8| -> anyhow::Result<u32> {
        Ok(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => bail!("invalid base64 byte {c}"),
        } as u32)
    };
    let bytes: Vec<u8> = s.bytes().filter(|c| !c.is_ascii_whitespace()).collect();
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    for chunk in bytes.chunks(4) {
        let data: Vec<u8> = chunk.iter().copied().filter(|&c| c != b'=').collect();
        let mut v = 0u32;
        for (k, &c) in data.iter().enumerate() {
            v |= val(c)? << (18 - 6 * k);
        }
        out.extend_from_slice(&v.to_be_bytes()[1..data.len().max(1)]);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_decodes_rfc4648_vectors() {
        for (raw, enc) in [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foobar", "Zm9vYmFy")] {
            assert_eq!(base64_decode(enc).unwrap(), raw.as_bytes());
        }
        assert!(base64_decode("Zm9*").is_err());
    }

    #[test]
    fn chunked_bodies_reassemble() {
        assert_eq!(dechunk(b"3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n").unwrap(), b"abcde");
    }
}
