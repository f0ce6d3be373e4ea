//! geopy 2.5's `Point(string)`: parsing a geodetic point such as `"41.5 N, 81.0 W, 2.5km"`
//! or `"23 26m 22s N 23 27m 30s E"` into latitude, longitude and altitude (km).
//!
//! geopy matches the string against one regular expression (`geopy.point.POINT_PATTERN`) with
//! Python's backtracking `re.match`. Which text ends up in which group depends on that
//! engine's backtracking order (a lazy `.*?` prefix, optional parts, `m` vs `mi` units), so
//! the pattern is reproduced node for node and run by a small backtracking matcher with the
//! same priorities rather than approximated by a hand-written parser.

/// A one-character test.
#[derive(Clone, Copy)]
enum Pred {
    /// `.`: anything but a newline.
    Any,
    /// `\d` (ASCII digits; Python also accepts other Unicode decimal digits).
    Digit,
    /// `\s`: Python's `str.isspace()`.
    Space,
    /// One literal character.
    Is(char),
    /// A character class of literal characters.
    OneOf(&'static str),
    /// A character class of literal characters plus `\s`.
    OneOfOrSpace(&'static str),
}

impl Pred {
    fn test(self, c: char) -> bool {
        match self {
            Pred::Any => c != '\n',
            Pred::Digit => c.is_ascii_digit(),
            Pred::Space => is_py_space(c),
            Pred::Is(x) => c == x,
            Pred::OneOf(set) => set.contains(c),
            Pred::OneOfOrSpace(set) => set.contains(c) || is_py_space(c),
        }
    }
}

/// Python's `str.isspace()` (Rust's whitespace plus the ASCII separators U+001C..U+001F).
fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// A regular-expression node.
enum Node {
    Char(Pred),
    Seq(Vec<Node>),
    Alt(Vec<Node>),
    Rep {
        node: Box<Node>,
        min: usize,
        max: usize,
        greedy: bool,
    },
    Group(usize, Box<Node>),
    /// `$`: the end, or just before a final newline.
    End,
}

fn ch(p: Pred) -> Node {
    Node::Char(p)
}

fn opt(n: Node) -> Node {
    Node::Rep {
        node: Box::new(n),
        min: 0,
        max: 1,
        greedy: true,
    }
}

fn star(n: Node) -> Node {
    Node::Rep {
        node: Box::new(n),
        min: 0,
        max: usize::MAX,
        greedy: true,
    }
}

fn plus(n: Node) -> Node {
    Node::Rep {
        node: Box::new(n),
        min: 1,
        max: usize::MAX,
        greedy: true,
    }
}

fn lit(s: &str) -> Node {
    Node::Seq(s.chars().map(|c| ch(Pred::Is(c))).collect())
}

/// `\d+(?:\.\d+)?`
fn float() -> Node {
    Node::Seq(vec![
        plus(ch(Pred::Digit)),
        opt(Node::Seq(vec![ch(Pred::Is('.')), plus(ch(Pred::Digit))])),
    ])
}

/// `[+-]?` + FLOAT
fn signed_float() -> Node {
    Node::Seq(vec![opt(ch(Pred::OneOf("+-"))), float()])
}

/// `\s*[,;/\s]\s*`
fn sep() -> Node {
    Node::Seq(vec![
        star(ch(Pred::Space)),
        ch(Pred::OneOfOrSpace(",;/")),
        star(ch(Pred::Space)),
    ])
}

/// `[ ]*`
fn spaces() -> Node {
    star(ch(Pred::Is(' ')))
}

/// One coordinate: optional front direction, degrees, optional `°`/minutes/seconds, optional
/// back direction. `g` is the first of its five group numbers.
fn coordinate(dirs: &'static str, g: usize) -> Node {
    Node::Seq(vec![
        opt(Node::Group(g, Box::new(ch(Pred::OneOf(dirs))))),
        spaces(),
        Node::Group(g + 1, Box::new(signed_float())),
        opt(Node::Seq(vec![
            ch(Pred::OneOfOrSpace("\u{b0}D*")),
            spaces(),
            opt(Node::Seq(vec![
                Node::Group(g + 2, Box::new(float())),
                ch(Pred::OneOf("\u{2032}'m")),
                spaces(),
            ])),
            opt(Node::Seq(vec![
                Node::Group(g + 3, Box::new(float())),
                ch(Pred::OneOf("\u{2033}\"s")),
                spaces(),
            ])),
        ])),
        opt(Node::Group(g + 4, Box::new(ch(Pred::OneOf(dirs))))),
    ])
}

const LAT: usize = 0;
const LON: usize = 5;
const ALT_DISTANCE: usize = 10;
const ALT_UNITS: usize = 11;
const GROUPS: usize = 12;

/// `geopy.point.POINT_PATTERN`.
fn point_pattern() -> Node {
    Node::Seq(vec![
        Node::Rep {
            node: Box::new(ch(Pred::Any)),
            min: 0,
            max: usize::MAX,
            greedy: false,
        },
        coordinate("NS", LAT),
        sep(),
        coordinate("EW", LON),
        opt(Node::Seq(vec![
            sep(),
            Node::Group(ALT_DISTANCE, Box::new(signed_float())),
            spaces(),
            Node::Group(
                ALT_UNITS,
                Box::new(Node::Alt(
                    ["km", "m", "mi", "ft", "nm", "nmi"]
                        .iter()
                        .map(|u| lit(u))
                        .collect(),
                )),
            ),
        ])),
        star(ch(Pred::Space)),
        Node::End,
    ])
}

type Caps = [Option<(usize, usize)>; GROUPS];

/// A backtracking matcher with Python `re` priorities (greedy/lazy repetition, ordered
/// alternation, group captures undone on backtracking).
struct Matcher<'a> {
    text: &'a [char],
    caps: Caps,
}

type Cont<'k, 'a> = &'k mut dyn FnMut(&mut Matcher<'a>, usize) -> bool;

impl<'a> Matcher<'a> {
    fn run(&mut self, node: &Node, pos: usize, k: Cont<'_, 'a>) -> bool {
        match node {
            Node::Char(p) => pos < self.text.len() && p.test(self.text[pos]) && k(self, pos + 1),
            Node::Seq(nodes) => self.seq(nodes, pos, k),
            Node::Alt(alts) => alts.iter().any(|a| self.run(a, pos, k)),
            Node::Rep {
                node,
                min,
                max,
                greedy,
            } => self.rep(node, *min, *max, *greedy, 0, pos, k),
            Node::Group(i, inner) => {
                let i = *i;
                let before = self.caps[i];
                let ok = self.run(inner, pos, &mut |m: &mut Matcher<'a>, end| {
                    let saved = m.caps[i];
                    m.caps[i] = Some((pos, end));
                    if k(m, end) {
                        true
                    } else {
                        m.caps[i] = saved;
                        false
                    }
                });
                if !ok {
                    self.caps[i] = before;
                }
                ok
            }
            Node::End => {
                let n = self.text.len();
                (pos == n || (pos + 1 == n && self.text[pos] == '\n')) && k(self, pos)
            }
        }
    }

    fn seq(&mut self, nodes: &[Node], pos: usize, k: Cont<'_, 'a>) -> bool {
        match nodes.split_first() {
            None => k(self, pos),
            Some((first, rest)) => {
                self.run(first, pos, &mut |m: &mut Matcher<'a>, p| m.seq(rest, p, k))
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn rep(
        &mut self,
        node: &Node,
        min: usize,
        max: usize,
        greedy: bool,
        count: usize,
        pos: usize,
        k: Cont<'_, 'a>,
    ) -> bool {
        // An iteration that consumes nothing ends the repetition, as in Python.
        let more = |m: &mut Matcher<'a>, k: Cont<'_, 'a>| {
            count < max
                && m.run(node, pos, &mut |m2: &mut Matcher<'a>, p| {
                    p != pos && m2.rep(node, min, max, greedy, count + 1, p, k)
                })
        };
        // Not symmetric: the order decides which match Python's engine finds first.
        #[allow(clippy::if_same_then_else)]
        if greedy {
            more(self, k) || (count >= min && k(self, pos))
        } else {
            (count >= min && k(self, pos)) || more(self, k)
        }
    }
}

/// geopy's `Point.from_string` length cap (a guard against pathological backtracking).
const MAX_STRING_LENGTH: usize = 256;

/// `Point(string)` → `(latitude, longitude, altitude_km)`, or `None` where geopy raises a
/// `ValueError` (unknown format, latitude out of range, non-finite values).
pub fn parse_point(string: &str) -> Option<(f64, f64, f64)> {
    if string.chars().count() > MAX_STRING_LENGTH {
        return None;
    }
    let text: Vec<char> = string.replace("''", "\"").chars().collect();
    let mut m = Matcher {
        text: &text,
        caps: [None; GROUPS],
    };
    let pattern = point_pattern();
    if !m.run(&pattern, 0, &mut |_, _| true) {
        return None;
    }
    let caps = m.caps;
    let group = |i: usize| caps[i].map(|(s, e)| text[s..e].iter().collect::<String>());
    let number = |i: usize| group(i).map_or(Some(0.0), |s| s.parse::<f64>().ok());
    let direction = |g: usize| group(g).or_else(|| group(g + 4));
    let latitude = parse_degrees(
        number(LAT + 1)?,
        number(LAT + 2)?,
        number(LAT + 3)?,
        direction(LAT),
    );
    let longitude = parse_degrees(
        number(LON + 1)?,
        number(LON + 2)?,
        number(LON + 3)?,
        direction(LON),
    );
    let altitude = match (group(ALT_DISTANCE), group(ALT_UNITS)) {
        (Some(d), Some(unit)) => parse_altitude(d.parse().ok()?, &unit),
        _ => 0.0,
    };
    normalize(latitude, longitude, altitude)
}

/// `Point.parse_degrees`: minutes and seconds extend the degrees away from zero; `S` and `W`
/// flip the sign.
fn parse_degrees(degrees: f64, arcminutes: f64, arcseconds: f64, direction: Option<String>) -> f64 {
    let mut degrees = degrees;
    let negative = degrees < 0.0;
    if arcminutes != 0.0 || arcseconds != 0.0 {
        // `units.degrees(arcminutes=..., arcseconds=...)`
        let mut more = 0.0;
        if arcminutes != 0.0 {
            more += arcminutes / 60.0;
        }
        if arcseconds != 0.0 {
            more += arcseconds / 3600.0;
        }
        if negative {
            degrees -= more;
        } else {
            degrees += more;
        }
    }
    match direction.as_deref() {
        Some("S") | Some("W") => -degrees,
        _ => degrees,
    }
}

/// `Point.parse_altitude`: the distance in kilometres, through `geopy.units.kilometers`.
fn parse_altitude(distance: f64, unit: &str) -> f64 {
    // `units.ft(1.)` and `units.nm(1.)`, computed the way geopy computes them.
    let feet_per_km = (0.0 + 1.0 / 1.609_344) * 5280.0;
    let nautical_per_km = 0.0 + 1.0 / 1.852;
    let km = |meters: f64, miles: f64, feet: f64, nautical: f64| {
        let mut ret = 0.0;
        if meters != 0.0 {
            ret += meters / 1000.0;
        }
        if feet != 0.0 {
            ret += feet / feet_per_km;
        }
        if nautical != 0.0 {
            ret += nautical / nautical_per_km;
        }
        ret + miles * 1.609_344
    };
    match unit {
        "km" => distance,
        "m" => km(distance, 0.0, 0.0, 0.0),
        "mi" => km(0.0, distance, 0.0, 0.0),
        "ft" => km(0.0, 0.0, distance, 0.0),
        _ => km(0.0, 0.0, 0.0, distance),
    }
}

/// `_normalize_coordinates`: `-0.0` becomes `0.0`, values must be finite, the latitude within
/// ±90, and a longitude beyond ±180 wraps into `[-180, 180)`.
fn normalize(latitude: f64, longitude: f64, altitude: f64) -> Option<(f64, f64, f64)> {
    let zero = |x: f64| if x == 0.0 { 0.0 } else { x };
    let (latitude, mut longitude, altitude) = (zero(latitude), zero(longitude), zero(altitude));
    if !(latitude.is_finite() && longitude.is_finite() && altitude.is_finite()) {
        return None;
    }
    if latitude.abs() > 90.0 {
        return None;
    }
    if longitude.abs() > 180.0 {
        let mut m = longitude % 360.0;
        if m == 0.0 {
            m = 0.0;
        }
        if m < -180.0 {
            m += 360.0;
        } else if m >= 180.0 {
            m -= 360.0;
        }
        longitude = m;
    }
    Some((latitude, longitude, altitude))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geopy_examples() {
        assert_eq!(parse_point("41.5,-81.0"), Some((41.5, -81.0, 0.0)));
        assert_eq!(parse_point("+41.5 -81.0"), Some((41.5, -81.0, 0.0)));
        assert_eq!(parse_point("41.5 N -81.0 W"), Some((41.5, 81.0, 0.0)));
        assert_eq!(
            parse_point("-41.5 S, 81.0 E, 2.5km"),
            Some((41.5, 81.0, 2.5))
        );
        assert_eq!(
            parse_point("35.6762;139.6503;0.02mi"),
            Some((35.6762, 139.6503, 0.03218688))
        );
        assert_eq!(
            parse_point("61.2181, -149.9003, 30m"),
            Some((61.2181, -149.9003, 0.03))
        );
        let (lat, lon, _) = parse_point("23 26m 22s N 23 27m 30s E 21.0mi").unwrap();
        assert!((lat - (23.0 + 26.0 / 60.0 + 22.0 / 3600.0)).abs() < 1e-12);
        assert!((lon - 23.458_333_333_333_332).abs() < 1e-12);
        let (lat, _, _) = parse_point("3 26' 22\" N 23 27' 30\" E").unwrap();
        assert!((lat - 3.439_444_444_444_444).abs() < 1e-12);
        assert_eq!(
            parse_point("0 0m 0.36s S 179 59m 59.64s E").map(|p| p.0),
            Some(-9.999_999_999_999_999e-5)
        );
        assert!(parse_point("UT: N 39\u{b0}20' 0'' / W 74\u{b0}35' 0''").is_some());
        assert_eq!(parse_point("north of the wall"), None);
        assert_eq!(parse_point("95, 10"), None);
        assert_eq!(parse_point("10, 190").map(|p| p.1), Some(-170.0));
    }

    #[test]
    fn long_inputs_stay_bounded() {
        // Worst cases for backtracking within geopy's 256-character cap, and beyond it.
        let digits = "1".repeat(256);
        assert_eq!(parse_point(&digits), None);
        let pairs = "1 ".repeat(128);
        assert!(parse_point(&pairs).is_some());
        let junk = format!("{}x", "1 1m ".repeat(50));
        assert_eq!(parse_point(&junk), None);
        assert_eq!(parse_point(&"1, 2 ".repeat(60)), None);
    }
}
