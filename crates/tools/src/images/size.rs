//! The `size` sent to the images API, as the tool's schema promises the model: the aspect ratio
//! and the 1K/2K/4K tier are read from the `size` text (omitted tier: 2K); an explicit
//! `WIDTHxHEIGHT` is normalized to multiples of 16 within the backend's bounds; an edit keeps its
//! base image's ratio unless another is asked for; GPT Image 1.x (and DALL·E, and a configured
//! `sizes` list) get the supported fixed size closest in ratio.
//!
//! Flexible backends (GPT Image 2 and any other model) follow GPT Image 2's rules: both edges
//! multiples of 16, the long edge at most 3840, long:short at most 3:1, and 655,360 to 8,294,400
//! pixels. The tiers name the long edge: 1K = 1024, 2K = 2048, 4K = 3840 (then scaled into the
//! pixel bounds, so 4K square is 2880x2880).

/// A resolution tier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tier {
    K1,
    K2,
    K4,
}

impl Tier {
    /// The long edge the tier aims at.
    pub fn long_edge(self) -> u32 {
        match self {
            Tier::K1 => 1024,
            Tier::K2 => 2048,
            Tier::K4 => 3840,
        }
    }
}

/// What a `size` argument asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SizeRequest {
    pub tier: Option<Tier>,
    /// Width over height.
    pub ratio: Option<f64>,
    /// An explicit `WIDTHxHEIGHT`.
    pub exact: Option<(u32, u32)>,
}

/// The bounds of a backend that takes any `WIDTHxHEIGHT`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bounds {
    pub multiple: u32,
    pub max_edge: u32,
    pub max_ratio: f64,
    pub min_pixels: u64,
    pub max_pixels: u64,
}

/// GPT Image 2's published limits.
pub const GPT_IMAGE_2: Bounds = Bounds {
    multiple: 16,
    max_edge: 3840,
    max_ratio: 3.0,
    min_pixels: 655_360,
    max_pixels: 8_294_400,
};

/// How a backend takes sizes.
#[derive(Clone, Debug, PartialEq)]
pub enum Backend {
    /// Only these sizes.
    Fixed(Vec<(u32, u32)>),
    /// Any size within the bounds.
    Flexible(Bounds),
}

const GPT_IMAGE_1: &[(u32, u32)] = &[(1024, 1024), (1536, 1024), (1024, 1536)];
const DALL_E_3: &[(u32, u32)] = &[(1024, 1024), (1792, 1024), (1024, 1792)];
const DALL_E_2: &[(u32, u32)] = &[(256, 256), (512, 512), (1024, 1024)];

impl Backend {
    /// The backend of a model name (any `provider/` prefix ignored; GPT Image 1.x is
    /// `gpt-image-1`, `gpt-image-1.5`, `gpt-image-1-mini`, dated snapshots, …), unless the
    /// configuration lists the sizes.
    pub fn for_model(model: &str, configured: Option<&[(u32, u32)]>) -> Backend {
        if let Some(sizes) = configured.filter(|s| !s.is_empty()) {
            return Backend::Fixed(sizes.to_vec());
        }
        let name = model
            .rsplit('/')
            .next()
            .unwrap_or(model)
            .to_ascii_lowercase();
        let fixed = if name.starts_with("gpt-image-1") {
            GPT_IMAGE_1
        } else if name.starts_with("dall-e-3") {
            DALL_E_3
        } else if name.starts_with("dall-e-2") {
            DALL_E_2
        } else {
            return Backend::Flexible(GPT_IMAGE_2);
        };
        Backend::Fixed(fixed.to_vec())
    }
}

/// `WIDTHxHEIGHT` (also `×`, `*`, spaces around them), both positive.
pub fn parse_wxh(text: &str) -> Option<(u32, u32)> {
    let t = text.trim().to_ascii_lowercase().replace('×', "x");
    let (w, h) = t.split_once(['x', '*'])?;
    let (w, h) = (w.trim().parse::<u32>().ok()?, h.trim().parse::<u32>().ok()?);
    (w > 0 && h > 0).then_some((w, h))
}

/// Reads a `size` argument: `"2K"`, `"16:9"`, `"4K 16:9"`, `"1920x1080"`, `"portrait, 1k"`,
/// `"auto"`, … Words: `square` (1:1), `landscape` (3:2), `portrait` (2:3), `widescreen`/`wide`
/// (16:9), `tall`/`vertical` (9:16). What is not understood is ignored.
pub fn parse(size: Option<&str>) -> SizeRequest {
    let mut req = SizeRequest::default();
    let Some(size) = size else {
        return req;
    };
    let text = compact(&size.to_lowercase().replace('×', "x"));
    for token in text.split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '(' | ')')) {
        let token = token.trim_matches(|c: char| matches!(c, '.' | '"' | '\''));
        if token.is_empty() {
            continue;
        }
        if let Some(wh) =
            parse_wxh(token).filter(|_| token.starts_with(|c: char| c.is_ascii_digit()))
        {
            req.exact = Some(wh);
        } else if let Some(r) = parse_ratio(token) {
            req.ratio = Some(r);
        } else {
            match token {
                "1k" => req.tier = Some(Tier::K1),
                "2k" => req.tier = Some(Tier::K2),
                "4k" | "uhd" => req.tier = Some(Tier::K4),
                "square" => req.ratio = Some(1.0),
                "landscape" => req.ratio = Some(1.5),
                "portrait" => req.ratio = Some(2.0 / 3.0),
                "widescreen" | "wide" => req.ratio = Some(16.0 / 9.0),
                "tall" | "vertical" => req.ratio = Some(9.0 / 16.0),
                _ => {}
            }
        }
    }
    req
}

/// Drops the spaces around `x`, `*` and `:` between numbers (`1920 x 1080` → `1920x1080`).
fn compact(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let joiner = |c: char| matches!(c, 'x' | '*' | ':');
    let mut out = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if c.is_whitespace() {
            let prev = chars[..i].iter().rev().find(|c| !c.is_whitespace());
            let next = chars[i + 1..].iter().find(|c| !c.is_whitespace());
            let joins = match (prev, next) {
                (Some(&p), Some(&n)) => {
                    (p.is_ascii_digit() && joiner(n)) || (joiner(p) && n.is_ascii_digit())
                }
                _ => false,
            };
            if joins {
                continue;
            }
        }
        out.push(c);
    }
    out
}

/// `W:H` with positive numbers (decimals allowed: `2.39:1`).
fn parse_ratio(token: &str) -> Option<f64> {
    let (w, h) = token.split_once(':')?;
    let (w, h) = (w.parse::<f64>().ok()?, h.parse::<f64>().ok()?);
    (w.is_finite() && h.is_finite() && w > 0.0 && h > 0.0).then(|| w / h)
}

/// The size to send: `request` read from the `size` argument, `base` the pixel size of the edit's
/// base image (its ratio is kept unless the request names a ratio or an exact size).
pub fn choose(backend: &Backend, request: &SizeRequest, base: Option<(u32, u32)>) -> (u32, u32) {
    let ratio_of = |(w, h): (u32, u32)| f64::from(w) / f64::from(h);
    let ratio = request
        .exact
        .map(ratio_of)
        .or(request.ratio)
        .or(base.map(ratio_of))
        .unwrap_or(1.0);
    let long_edge = match request.exact {
        Some((w, h)) => w.max(h),
        None => request.tier.unwrap_or(Tier::K2).long_edge(),
    };
    match backend {
        Backend::Fixed(sizes) => closest_fixed(sizes, ratio, long_edge),
        Backend::Flexible(bounds) => match request.exact {
            Some((w, h)) => fit(f64::from(w), f64::from(h), bounds),
            None => {
                let r = ratio.clamp(1.0 / bounds.max_ratio, bounds.max_ratio);
                let edge = f64::from(long_edge);
                if r >= 1.0 {
                    fit(edge, edge / r, bounds)
                } else {
                    fit(edge * r, edge, bounds)
                }
            }
        },
    }
}

/// The listed size closest in ratio (log distance, so 2:1 and 1:2 are as far from 1:1); among
/// equals, the one whose long edge is closest to `long_edge`.
fn closest_fixed(sizes: &[(u32, u32)], ratio: f64, long_edge: u32) -> (u32, u32) {
    let key = |&(w, h): &(u32, u32)| {
        let r = (f64::from(w) / f64::from(h)).ln();
        let dr = (r - ratio.ln()).abs();
        let de = (i64::from(w.max(h)) - i64::from(long_edge)).unsigned_abs();
        // Ratio distances within a rounding error count as equal.
        ((dr * 1e6).round() as u64, de)
    };
    sizes
        .iter()
        .min_by_key(|s| key(s))
        .copied()
        .unwrap_or((1024, 1024))
}

/// `w`×`h` brought into the bounds keeping its ratio (clamped to the ratio bound), then rounded to
/// multiples: the long edge to the nearest multiple and the short edge from the ratio; when that
/// rounding leaves the bounds, the legal floor/ceil rounding closest in ratio.
fn fit(w: f64, h: f64, b: &Bounds) -> (u32, u32) {
    let (mut w, mut h) = (w.max(1.0), h.max(1.0));
    // The short edge grows to meet the ratio bound.
    if w / h > b.max_ratio {
        h = w / b.max_ratio;
    } else if h / w > b.max_ratio {
        w = h / b.max_ratio;
    }
    let target = w / h;
    let edge = f64::from(b.max_edge);
    if w.max(h) > edge {
        let s = edge / w.max(h);
        (w, h) = (w * s, h * s);
    }
    let (min_px, max_px) = (b.min_pixels as f64, b.max_pixels as f64);
    if w * h > max_px {
        let s = (max_px / (w * h)).sqrt();
        (w, h) = (w * s, h * s);
    }
    if w * h < min_px {
        let s = (min_px / (w * h)).sqrt();
        (w, h) = (w * s, h * s);
    }
    let m = f64::from(b.multiple.max(1));
    let near = |v: f64| ((v / m).round() * m).max(m);
    let down = |v: f64| ((v / m).floor() * m).max(m);
    let up = |v: f64| (v / m).ceil() * m;
    let legal = |(w, h): (f64, f64)| {
        w <= edge
            && h <= edge
            && w * h >= min_px
            && w * h <= max_px
            && w.max(h) / w.min(h) <= b.max_ratio + 1e-9
    };
    let first = if w >= h {
        let long = near(w);
        (long, near(long / target))
    } else {
        let long = near(h);
        (near(long * target), long)
    };
    let best = if legal(first) {
        Some(first)
    } else {
        [
            (down(w), down(h)),
            (down(w), up(h)),
            (up(w), down(h)),
            (up(w), up(h)),
        ]
        .into_iter()
        .filter(|c| legal(*c))
        .min_by(|a, b| {
            let off = |(cw, ch): (f64, f64)| ((cw / ch).ln() - target.ln()).abs();
            off(*a).total_cmp(&off(*b))
        })
    };
    match best {
        Some((w, h)) => (w as u32, h as u32),
        None => (1024, 1024),
    }
}

/// `WIDTHxHEIGHT`.
pub fn format((w, h): (u32, u32)) -> String {
    format!("{w}x{h}")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    /// The `size` argument, the base image's size, the size sent.
    type Case = (Option<&'static str>, Option<(u32, u32)>, &'static str);

    fn size(model: &str, size: Option<&str>, base: Option<(u32, u32)>) -> String {
        format(choose(&Backend::for_model(model, None), &parse(size), base))
    }

    #[test]
    fn tiers_times_ratios_on_gpt_image_2() {
        let cases: &[(Option<&str>, &str)] = &[
            (None, "2048x2048"),
            (Some(""), "2048x2048"),
            (Some("auto"), "2048x2048"),
            (Some("1K"), "1024x1024"),
            (Some("2K"), "2048x2048"),
            (Some("4K"), "2880x2880"),
            (Some("16:9"), "2048x1152"),
            (Some("1K 16:9"), "1088x608"),
            (Some("4K 16:9"), "3840x2160"),
            (Some("16:9 4k"), "3840x2160"),
            (Some("9:16, 4K"), "2160x3840"),
            (Some("2K 3:2"), "2048x1360"),
            (Some("4K 3:2"), "3520x2352"),
            (Some("2K 4:3"), "2048x1536"),
            (Some("1K 4:3"), "1024x768"),
            (Some("2K 21:9"), "2048x880"),
            (Some("4:1"), "2048x688"),
            (Some("1:5"), "688x2048"),
            (Some("2.39:1 2K"), "2048x864"),
            (Some("portrait"), "1360x2048"),
            (Some("landscape 1K"), "1024x688"),
            (Some("square 4K"), "2880x2880"),
            (Some("widescreen"), "2048x1152"),
            (Some("something odd"), "2048x2048"),
        ];
        for (given, want) in cases {
            assert_eq!(size("gpt-image-2", *given, None), *want, "{given:?}");
        }
        // Any model we do not know follows the same rules.
        assert_eq!(size("flux-dev", Some("4K 16:9"), None), "3840x2160");
    }

    #[test]
    fn explicit_sizes_are_normalized_within_the_bounds() {
        let cases: &[(&str, &str)] = &[
            ("1024x1024", "1024x1024"),
            ("1920x1080", "1920x1088"),
            ("1920 x 1080", "1920x1088"),
            ("1000×700", "1008x704"),
            ("3840x2160", "3840x2160"),
            // Over the long edge: scaled down keeping the ratio.
            ("7680x4320", "3840x2160"),
            // Over the pixel budget.
            ("4096x4096", "2880x2880"),
            // Under the pixel minimum.
            ("512x512", "816x816"),
            // Beyond 3:1: the short edge grows.
            ("3000x500", "3008x1008"),
            ("100x1", "1408x480"),
            ("2K 1500x1000", "1504x1008"),
        ];
        for (given, want) in cases {
            let got = size("gpt-image-2", Some(given), None);
            assert_eq!(got, *want, "{given}");
            let (w, h) = parse_wxh(&got).unwrap();
            assert!(w % 16 == 0 && h % 16 == 0, "{got}");
            let px = u64::from(w) * u64::from(h);
            assert!((655_360..=8_294_400).contains(&px), "{got}");
            assert!(w.max(h) <= 3840 && f64::from(w.max(h)) / f64::from(w.min(h)) <= 3.0);
        }
    }

    #[test]
    fn gpt_image_1_models_get_their_fixed_sizes_by_ratio() {
        for model in [
            "gpt-image-1",
            "gpt-image-1.5",
            "gpt-image-1-mini",
            "GPT-Image-1",
            "openai/gpt-image-1.5",
        ] {
            let cases: &[Case] = &[
                (None, None, "1024x1024"),
                (Some("4K"), None, "1024x1024"),
                (Some("16:9"), None, "1536x1024"),
                (Some("4K 9:16"), None, "1024x1536"),
                (Some("1920x1080"), None, "1536x1024"),
                (Some("1080x1920"), None, "1024x1536"),
                (Some("1100x1000"), None, "1024x1024"),
                (Some("portrait"), None, "1024x1536"),
                // Edits: the base's ratio.
                (None, Some((4032, 3024)), "1536x1024"),
                (None, Some((3024, 4032)), "1024x1536"),
                (Some("2K"), Some((800, 800)), "1024x1024"),
                (Some("1:1"), Some((4032, 3024)), "1024x1024"),
            ];
            for (given, base, want) in cases {
                assert_eq!(
                    size(model, *given, *base),
                    *want,
                    "{model} {given:?} {base:?}"
                );
            }
        }
        assert_eq!(size("dall-e-3", Some("16:9"), None), "1792x1024");
        assert_eq!(size("dall-e-2", Some("4K"), None), "1024x1024");
        assert_eq!(size("dall-e-2", Some("300x300"), None), "256x256");
        // A configured list wins over the model's own.
        let listed = Backend::for_model("gpt-image-2", Some(&[(512, 512), (768, 512)]));
        assert_eq!(
            format(choose(&listed, &parse(Some("16:9")), None)),
            "768x512"
        );
    }

    #[test]
    fn edits_keep_the_base_ratio_unless_another_is_asked_for() {
        let cases: &[(Option<&str>, (u32, u32), &str)] = &[
            (None, (800, 600), "2048x1536"),
            (None, (600, 800), "1536x2048"),
            (Some("1K"), (800, 600), "1024x768"),
            (Some("4K"), (1920, 1080), "3840x2160"),
            (None, (1000, 1000), "2048x2048"),
            (None, (1366, 768), "2048x1152"),
            // A panorama beyond 3:1 is clamped to 3:1.
            (None, (6000, 1000), "2048x688"),
            // Another ratio asked for: it wins.
            (Some("1:1"), (800, 600), "2048x2048"),
            (Some("9:16 1K"), (800, 600), "608x1088"),
            (Some("1024x1536"), (800, 600), "1024x1536"),
        ];
        for (given, base, want) in cases {
            assert_eq!(
                size("gpt-image-2", *given, Some(*base)),
                *want,
                "{given:?} {base:?}"
            );
        }
    }
}
