//! The lane's unit tests.

use super::*;

/// `lt_lane` is `marker_lane` for a held `<`, with and without `<think>`.
#[test]
fn a_held_lt_wants_the_first_open_marker() {
    for think in [true, false] {
        let mut p = Parser::new(crate::parser::ParserConfig {
            think,
            ..Default::default()
        });
        p.held.push('<');
        p.state = State::TextTag;
        assert_eq!(p.held_marker(), Some(OPEN_CALL));
    }
}
#[test]
fn a_lane_takes_only_what_its_set_lets_through() {
    let mut lane = Lane::new(40, |set, b| b == b'<' || (set == 1 && b == b'x'));
    assert!(!lane.takes_byte(b'a') && !lane.takes_str(b"a"));
    lane.open(Kind::Text, 0);
    assert!(lane.takes_byte(b'a') && lane.takes_byte(b'x'));
    assert!(!lane.takes_byte(b'<'));
    assert!(lane.takes_str("café".as_bytes()) && !lane.takes_str(b"a<b"));
    assert!(!lane.takes_str(b""));
    lane.open(Kind::Text, 1);
    assert!(lane.takes_byte(b'a') && !lane.takes_byte(b'x') && !lane.takes_str(b"xa"));
    lane.open(Kind::Text, 32);
    assert!(!lane.takes_byte(b'a'));
    lane.open(Kind::Text, 0);
    lane.suspend();
    assert!(!lane.takes_byte(b'a') && !lane.takes_str(b"a"));
    lane.resume();
    assert!(lane.takes_byte(b'a') && lane.takes_str(b"a"));
    lane.suspend();
    lane.close();
    lane.resume();
    assert!(!lane.takes_byte(b'a'));
    lane.expect(Some('x'), Some((Kind::Text, 1, 0)));
    assert!(!lane.takes_byte(b'x') && lane.wants(b'x') && !lane.wants(b'a'));
    assert!(lane.releases(b'a') && !lane.releases(b'x') && !lane.releases(b'<'));
    lane.suspend();
    assert!(!lane.wants(b'x'));
    lane.resume();
    assert!(lane.wants(b'x'));
    lane.reopen();
    assert!(lane.takes_byte(b'x') && !lane.wants(b'x') && !lane.releases(b'a'));
    lane.expect(None, None);
    assert!(!lane.wants(b'x') && !lane.wants(0) && !lane.releases(b'a'));
    lane.open(Kind::Text, 0);
    assert!(!lane.wants(b'x'));
    lane.close();
    assert!(!lane.takes_byte(b'a') && !lane.takes_str(b"a"));
}

/// The lane wants a marker's next character, ASCII or not, only while the marker goes on after it.
#[test]
fn next_char_is_wanted_while_the_marker_goes_on() {
    let marker = "<｜tool▁x｜>".as_bytes();
    assert_eq!(next_char(marker, 0), Some('<'));
    assert_eq!(next_char(marker, 1), Some('｜'));
    assert_eq!(next_char(marker, 4), Some('t'));
    assert_eq!(next_char(marker, 8), Some('▁'));
    assert_eq!(next_char(marker, 12), Some('｜'));
    assert_eq!(next_char(marker, 15), None);
    assert_eq!(next_char(marker, 16), None);
    assert_eq!(next_char("ab｜".as_bytes(), 2), None);
}
