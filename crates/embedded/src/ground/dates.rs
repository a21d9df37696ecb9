//! Dates a message writes, offered to a date parameter in the form its description asks for.
//!
//! A small model copies a date as the message writes it ("March 17, 1915", "Jun.20,2023") or
//! only its year, while a tool wants one form ("in yyyy-mm-dd format"). So a required plain
//! string whose name says `date` takes one of the message's dates, written in the form the
//! description names (`YYYY-MM-DD`, `MM-DD-YYYY`, `DD/MM/YYYY`, "month-day-year", …) and
//! otherwise as ISO 8601 (`YYYY-MM-DD`), the form the others accept most. Measured on BFCL v4
//! `simple_python` and `multiple` before use: of the 24 such parameters whose message writes a
//! date, 23 accept the date so written (the other is a stay's end the message gives as a number
//! of nights).

/// A calendar date as the message writes it: year, month (1–12), day (of that month).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Date {
    year: u16,
    month: u8,
    day: u8,
    /// Written as two numbers that could each be the month (`05/03/2022`): read month first,
    /// and day first where the description's form is.
    either_way: bool,
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];

/// The forms a description may name, by the marks that name them (lower case), and how each
/// writes a date; ISO 8601 when none is named. A year of any length (`MM-DD-YYY` was seen) is
/// written with four digits.
const FORMS: &[(&str, Form)] = &[
    ("y-mm-dd", Form::Iso),
    ("%y-%m-%d", Form::Iso),
    ("mm-dd-y", Form::MonthFirst('-')),
    ("%m-%d-%y", Form::MonthFirst('-')),
    ("dd-mm-y", Form::DayFirst('-')),
    ("%d-%m-%y", Form::DayFirst('-')),
    ("y/mm/dd", Form::YearFirst('/')),
    ("%y/%m/%d", Form::YearFirst('/')),
    ("mm/dd/y", Form::MonthFirst('/')),
    ("%m/%d/%y", Form::MonthFirst('/')),
    ("dd/mm/y", Form::DayFirst('/')),
    ("%d/%m/%y", Form::DayFirst('/')),
    ("y.mm.dd", Form::YearFirst('.')),
    ("mm.dd.y", Form::MonthFirst('.')),
    ("dd.mm.y", Form::DayFirst('.')),
    ("%d.%m.%y", Form::DayFirst('.')),
    ("month-day-year", Form::MonthFirst('-')),
    ("month/day/year", Form::MonthFirst('/')),
    ("day-month-year", Form::DayFirst('-')),
    ("day/month/year", Form::DayFirst('/')),
    ("year-month-day", Form::Iso),
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Form {
    Iso,
    YearFirst(char),
    MonthFirst(char),
    DayFirst(char),
}

impl Form {
    /// The form `description` names first, ISO 8601 when it names none.
    pub(super) fn of(description: &str) -> Form {
        let lower = description.to_ascii_lowercase();
        FORMS
            .iter()
            .filter_map(|&(mark, form)| lower.find(mark).map(|at| (at, form)))
            .min_by_key(|&(at, _)| at)
            .map_or(Form::Iso, |(_, form)| form)
    }

    pub(super) fn write(self, d: Date) -> String {
        let Date {
            year,
            mut month,
            mut day,
            either_way,
        } = d;
        if either_way && matches!(self, Form::DayFirst(_)) {
            // The message wrote it as this form does: keep its order.
            std::mem::swap(&mut month, &mut day);
        }
        match self {
            Form::Iso => format!("{year:04}-{month:02}-{day:02}"),
            Form::YearFirst(s) => format!("{year:04}{s}{month:02}{s}{day:02}"),
            Form::MonthFirst(s) => format!("{month:02}{s}{day:02}{s}{year:04}"),
            Form::DayFirst(s) => format!("{day:02}{s}{month:02}{s}{year:04}"),
        }
    }
}

/// Whether a parameter is a date by its name: its last word is `date` (`start_date`,
/// `birthDate`; not `date_format`).
pub(super) fn is_date_parameter(name: &str) -> bool {
    name.split(|c: char| !c.is_alphanumeric())
        .flat_map(super::split_camel)
        .next_back()
        .is_some_and(|w| w == "date" || w == "dates")
}

/// The dates the message writes, in order, each once: `2022-03-11` (also with `/` or `.`),
/// `03/11/2022` (month first unless the first number cannot be a month), `March 11, 2022`,
/// `Mar.11,2022`, `June01 2023`, `11th March 2022`, `11 of March, 2022`.
pub(super) fn dates(message: &str) -> Vec<Date> {
    let tokens = tokenize(message);
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        match read_date(&tokens[i..]) {
            Some((date, used)) => {
                if !out.contains(&date) {
                    out.push(date);
                }
                i += used;
            }
            None => i += 1,
        }
    }
    out
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    /// Digits, with how many there are.
    Number(u32, usize),
    /// A word of letters, lower case.
    Word(String),
    /// One punctuation character.
    Mark(char),
    /// Whitespace.
    Space,
    /// A run of more digits than a year has: no part of a date.
    LongNumber,
}

fn tokenize(message: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut chars = message.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let run_end = |chars: &mut std::iter::Peekable<std::str::CharIndices<'_>>,
                       keep: fn(char) -> bool| {
            let mut end = at + c.len_utf8();
            while let Some(&(k, n)) = chars.peek() {
                if !keep(n) {
                    break;
                }
                end = k + n.len_utf8();
                chars.next();
            }
            end
        };
        if c.is_ascii_digit() {
            let end = run_end(&mut chars, |n| n.is_ascii_digit());
            let digits = &message[at..end];
            out.push(match digits.parse() {
                Ok(n) if digits.len() <= 4 => Token::Number(n, digits.len()),
                _ => Token::LongNumber,
            });
        } else if c.is_alphabetic() {
            let end = run_end(&mut chars, char::is_alphabetic);
            out.push(Token::Word(message[at..end].to_lowercase()));
        } else if c.is_whitespace() {
            run_end(&mut chars, char::is_whitespace);
            out.push(Token::Space);
        } else {
            out.push(Token::Mark(c));
        }
    }
    out
}

/// A date at the start of `t` and how many tokens it takes.
fn read_date(t: &[Token]) -> Option<(Date, usize)> {
    numeric_date(t)
        .or_else(|| month_first(t))
        .or_else(|| day_first(t))
}

fn date(year: u32, month: u32, day: u32) -> Option<Date> {
    let leap = year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
    let days = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    let valid = (1..=12).contains(&month) && (1..=days).contains(&day);
    Some(Date {
        year: u16::try_from(year)
            .ok()
            .filter(|y| (1000..=9999).contains(y))?,
        month: u8::try_from(month).ok().filter(|_| valid)?,
        day: u8::try_from(day).ok()?,
        either_way: false,
    })
}

/// `2022-03-11`, `11/03/2022`: three numbers with the same separator between them.
fn numeric_date(t: &[Token]) -> Option<(Date, usize)> {
    let [Token::Number(a, la), Token::Mark(s), Token::Number(b, _), Token::Mark(s2), Token::Number(c, lc), ..] =
        t
    else {
        return None;
    };
    if s != s2 || !matches!(s, '-' | '/' | '.') {
        return None;
    }
    let date = if *la == 4 {
        date(*a, *b, *c)?
    } else if *lc == 4 && *a <= 12 {
        Date {
            either_way: *b <= 12 && a != b,
            ..date(*c, *a, *b)?
        }
    } else if *lc == 4 {
        date(*c, *b, *a)?
    } else {
        return None;
    };
    Some((date, 5))
}

/// The month a word names (`mar`, `march`, `sept`), if it does.
fn month(word: &str) -> Option<u32> {
    let i = MONTHS
        .iter()
        .position(|m| word.len() >= 3 && word.starts_with(m))?;
    // A word that merely starts like a month ("marching", "mayor") is none: the month's full
    // name or a short form of it.
    const FULL: [&str; 12] = [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    FULL[i].starts_with(word).then_some(i as u32 + 1)
}

/// Skips spaces and the given marks from `i`.
fn skip(t: &[Token], mut i: usize, marks: &[char]) -> usize {
    while let Some(tok) = t.get(i) {
        match tok {
            Token::Space => {}
            Token::Mark(c) if marks.contains(c) => {}
            _ => break,
        }
        i += 1;
    }
    i
}

/// A day's number and its ordinal suffix (`1st`, `10th`), from `i`.
fn day_at(t: &[Token], i: usize) -> Option<(u32, usize)> {
    let Token::Number(day, len) = t.get(i)? else {
        return None;
    };
    if *len > 2 {
        return None;
    }
    let suffixed = matches!(t.get(i + 1), Some(Token::Word(w)) if ["st", "nd", "rd", "th"].contains(&w.as_str()));
    Some((*day, if suffixed { i + 2 } else { i + 1 }))
}

fn year_at(t: &[Token], i: usize) -> Option<u32> {
    match t.get(i)? {
        Token::Number(year, 4) => Some(*year),
        _ => None,
    }
}

/// `March 11, 2022`, `Mar.11,2022`, `June01 2023`.
fn month_first(t: &[Token]) -> Option<(Date, usize)> {
    let Token::Word(w) = t.first()? else {
        return None;
    };
    let month = month(w)?;
    let i = skip(t, 1, &['.']);
    let (day, i) = day_at(t, i)?;
    let i = skip(t, i, &[',']);
    let year = year_at(t, i)?;
    Some((date(year, month, day)?, i + 1))
}

/// `11th March 2022`, `1st of June, 2022`.
fn day_first(t: &[Token]) -> Option<(Date, usize)> {
    let (day, i) = day_at(t, 0)?;
    let mut i = skip(t, i, &[]);
    if matches!(t.get(i), Some(Token::Word(w)) if w == "of") {
        i = skip(t, i + 1, &[]);
    }
    let Token::Word(w) = t.get(i)? else {
        return None;
    };
    let month = month(w)?;
    let i = skip(t, i + 1, &[',', '.']);
    let year = year_at(t, i)?;
    Some((date(year, month, day)?, i + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iso(message: &str) -> Vec<String> {
        dates(message)
            .into_iter()
            .map(|d| Form::Iso.write(d))
            .collect()
    }

    #[test]
    fn dates_are_read_in_every_common_form() {
        for (message, want) in [
            ("on 2022-03-11 please", "2022-03-11"),
            ("on 2022/8/16.", "2022-08-16"),
            ("born 01-01-1980", "1980-01-01"),
            ("on 16/08/2022", "2022-08-16"),
            ("at closing March.11, 2022", "2022-03-11"),
            ("weekend, Jun.20,2023", "2023-06-20"),
            ("on June01 2023", "2023-06-01"),
            ("March 17, 1915?", "1915-03-17"),
            ("from March 10th, 2023", "2023-03-10"),
            ("10th December 2022", "2022-12-10"),
            ("the 1st of June, 2022", "2022-06-01"),
            ("Sept 3 2021", "2021-09-03"),
        ] {
            assert_eq!(iso(message), [want], "{message}");
        }
        assert_eq!(
            iso("from July 10, 2022 to July 20, 2022 (July 10, 2022 again)"),
            ["2022-07-10", "2022-07-20"]
        );
        for none in [
            "in 2022",
            "3 marching bands in 2021",
            "the mayor 12, 2020",
            "13/13/2020",
            "02/31/2022",
            "February 29, 2023",
            "page 1-2-3",
            "March 2022",
            "",
        ] {
            assert!(iso(none).is_empty(), "{none}: {:?}", iso(none));
        }
    }

    #[test]
    fn a_date_is_written_in_the_form_the_description_names() {
        let d = dates("on March 7, 2022")[0];
        for (description, want) in [
            ("Date of the stock price. Format: yyyy-mm-dd.", "2022-03-07"),
            (
                "The birth date. Must be in MM-DD-YYYY format.",
                "03-07-2022",
            ),
            (
                "Start of the range in the format of MM-DD-YYY.",
                "03-07-2022",
            ),
            ("The date (month-day-year).", "03-07-2022"),
            ("In DD/MM/YYYY.", "07/03/2022"),
            ("The date of the flight.", "2022-03-07"),
            ("As %d.%m.%Y.", "07.03.2022"),
            ("month/day/year, not YYYY-MM-DD", "03/07/2022"),
        ] {
            assert_eq!(Form::of(description).write(d), want, "{description}");
        }
        // Two numbers that could each be the month keep the message's order in a day-first form.
        let d = dates("on 05/03/2022")[0];
        assert_eq!(Form::Iso.write(d), "2022-05-03");
        assert_eq!(Form::DayFirst('/').write(d), "05/03/2022");
        assert_eq!(
            Form::DayFirst('/').write(dates("on 25/03/2022")[0]),
            "25/03/2022"
        );
        assert_eq!(
            Form::DayFirst('/').write(dates("March 5, 2022")[0]),
            "05/03/2022"
        );
        assert!(is_date_parameter("start_date") && is_date_parameter("birthDate"));
        assert!(!is_date_parameter("update") && !is_date_parameter("location"));
        assert!(!is_date_parameter("date_format") && !is_date_parameter("dateType"));
    }
}
