use super::*;
use serde_json::json;

fn settle(message: &str, properties: Value) -> (Vec<String>, Value) {
    let Value::Object(mut props) = properties else {
        unreachable!()
    };
    let keys = Mentions::from_message(message).settle(&mut props, &["given".to_owned()]);
    (keys, Value::Object(props))
}

#[test]
fn a_named_boolean_is_true_unless_negated() {
    let props = json!({
        "detailed": {"type": "boolean"},
        "include_humidity": {"type": "boolean"},
        "full_text": {"type": "boolean"},
        "verbose": {"type": "boolean"}
    });
    let (keys, p) = settle(
        "Find detailed information on the humidity. Don't return full text.",
        props,
    );
    assert_eq!(keys, ["detailed", "include_humidity", "full_text"]);
    assert_eq!(p["detailed"]["enum"], json!([true]));
    assert_eq!(p["include_humidity"]["enum"], json!([true]));
    assert_eq!(p["full_text"]["enum"], json!([false]));
    assert!(p["verbose"].get("enum").is_none());
}

#[test]
fn a_named_number_takes_the_number_at_its_name() {
    let props = json!({
        "bedrooms": {"type": "integer"},
        "bathrooms": {"type": "integer"},
        "area": {"type": "integer"},
        "acceleration": {"type": "number"},
        "radius": {"type": "integer", "minimum": 10},
        "given": {"type": "integer"}
    });
    let (keys, p) = settle(
        "A house with 3 bedrooms, 2 bathrooms and area of 1800 square feet; acceleeration of 9.8; radius 4; given 7",
        props,
    );
    // A required number is the model's choice among the message's numbers.
    assert!(p["given"].get("enum").is_none());
    assert_eq!(p["bedrooms"]["enum"], json!([3]));
    assert_eq!(p["bathrooms"]["enum"], json!([2]));
    assert_eq!(p["area"]["enum"], json!([1800]));
    assert_eq!(p["acceleration"]["enum"], json!([9.8]));
    // Out of the schema's bounds: not taken.
    assert!(p["radius"].get("enum").is_none());
    assert_eq!(keys.len(), 4);
}

#[test]
fn two_parameters_named_by_one_word_take_no_number() {
    let props = json!({
        "temperature1": {"type": "number"},
        "temperature2": {"type": "number"},
        "mass": {"type": "integer"}
    });
    let (keys, p) = settle(
        "The final temperature when 20 kg of water at 30 degrees meets mass 15",
        props,
    );
    assert_eq!(keys, ["mass"]);
    assert!(p["temperature1"].get("enum").is_none());
    assert_eq!(p["mass"]["enum"], json!([15]));
    // An integer parameter takes no fraction.
    let (keys, _) = settle("a count of 2.5", json!({"count": {"type": "integer"}}));
    assert!(keys.is_empty());
    // A required parameter named by the same word counts too.
    let Value::Object(mut props) = json!({
        "distance_in_light_years": {"type": "number"},
        "speed_of_light": {"type": "number"}
    }) else {
        unreachable!()
    };
    let keys = Mentions::from_message("a star 4 light years away")
        .settle(&mut props, &["distance_in_light_years".to_owned()]);
    assert!(keys.is_empty(), "{keys:?}");
}

#[test]
fn an_enum_keeps_the_values_the_message_writes() {
    let props = json!({
        "route_type": {"type": "string", "enum": ["fastest", "shortest", "scenic"]},
        "mode": {"type": "string", "enum": ["walk", "drive"]},
        "root_type": {"type": "string", "enum": ["real", "all"]}
    });
    let (keys, p) = settle(
        "Directions using the Fastest route; find all the roots (walking is not a mode here)",
        props,
    );
    assert_eq!(keys, ["route_type", "mode", "root_type"]);
    assert_eq!(p["route_type"]["enum"], json!(["fastest"]));
    assert_eq!(p["root_type"]["enum"], json!(["all"]));
    // `walk` is inside `walking`: not written as a word, but the one value a word shares its
    // stem with.
    assert_eq!(p["mode"]["enum"], json!(["walk"]));
    // No value written: the one a word shares its stem with.
    let (keys, p) = settle(
        "The punishments for theft in detail",
        json!({"detail_level": {"type": "string", "enum": ["basic", "detailed"]}}),
    );
    assert_eq!(keys, ["detail_level"]);
    assert_eq!(p["detail_level"]["enum"], json!(["detailed"]));
}

#[test]
fn a_plain_string_takes_the_options_its_description_quotes_that_the_message_writes() {
    let props = json!({
        "temp_unit": {"type": "string",
            "description": "The temperature unit ('Celsius' or 'Fahrenheit'). Default is 'Fahrenheit'."},
        "key": {"type": "string", "description": "The root, e.g., 'C', 'F#', 'Ab'."},
        "model": {"type": "string", "description": "The user's model: \"Darwin\", \"Lamarck\"."},
        "mode": {"type": "string", "format": "date", "description": "'celsius'"},
        "note": {"type": "string", "description": "Free text, no options."}
    });
    let (keys, p) = settle(
        "The C# scale, and the average temperature in celsius by Darwin's model",
        props,
    );
    assert_eq!(keys, ["temp_unit", "model"], "{p}");
    // Written as the description writes it; a possessive still writes the name.
    assert_eq!(p["temp_unit"]["enum"], json!(["Celsius"]));
    assert_eq!(p["model"]["enum"], json!(["Darwin"]));
    // `C` is glued to `#`, and a string with a format is not plain.
    for key in ["key", "mode", "note"] {
        assert!(p[key].get("enum").is_none(), "{key}: {p}");
    }
    assert_eq!(
        quoted_options(Some(&json!("The user's pick: 'a b' or \"c\", not 'x"))),
        ["a b", "c"]
    );
}

#[test]
fn number_lists_are_runs_of_numbers() {
    let m = Mentions::from_message(
        "Control [10, 15, 12] and Treated [18, 16]; 3 bedrooms; again 10, 15, 12",
    );
    let lists: Vec<Vec<String>> = m
        .number_lists()
        .iter()
        .map(|l| l.iter().map(Number::to_string).collect())
        .collect();
    assert_eq!(lists, [vec!["10", "15", "12"], vec!["18", "16"]]);
    // Ordinals are numbers, and an `and` joins a list's last item.
    let m = Mentions::from_message("the 2nd, 3rd and 4th floors; [1, 2] and [3]; 16th century");
    let lists: Vec<Vec<String>> = m
        .number_lists()
        .iter()
        .map(|l| l.iter().map(Number::to_string).collect())
        .collect();
    assert_eq!(lists, [vec!["2", "3", "4"], vec!["1", "2"]]);
    assert_eq!(m.tokens.last(), Some(&Token::Word("century".into())));
}

#[test]
fn words_and_numbers_are_read_in_order() {
    let m = Mentions::from_message("Don't take 3 bedrooms, x2 or -4.5 km; Zürich");
    let words: Vec<&Token> = m.tokens.iter().collect();
    assert_eq!(
        words,
        [
            &Token::Word("don't".into()),
            &Token::Word("take".into()),
            &Token::Number(3.into()),
            &Token::Word("bedrooms".into()),
            &Token::Word("x".into()),
            &Token::Word("or".into()),
            &Token::Number(Number::from_f64(-4.5).unwrap()),
            &Token::Word("km".into()),
            &Token::Word("zürich".into()),
        ]
    );
}

#[test]
fn a_list_of_options_takes_those_the_message_writes_in_its_order() {
    let props = json!({
        "avoid": {"type": "array", "items": {"type": "string", "enum": ["tolls", "highways", "ferries"]}},
        "features": {"type": "array", "items": {"type": "string", "enum": ["price", "rating"]}},
        "data_field": {"type": "array", "minItems": 3,
            "items": {"type": "string", "enum": ["Personal Info", "Job History", "Payroll"]}},
        "amenities": {"type": "array", "items": {"type": "string", "enum": ["Tennis Court", "Playground"]}}
    });
    let (keys, p) = settle(
        "Avoid highways and toll roads; the price and ratings; Job History and Personal Info",
        props,
    );
    assert_eq!(keys, ["avoid", "features"], "{p}");
    // In the message's order, a plural or a singular writing an option, the list written whole.
    assert_eq!(p["avoid"]["enum"], json!([["highways", "tolls"]]));
    assert!(p["avoid"].get("items").is_none());
    assert_eq!(p["features"]["enum"], json!([["price", "rating"]]));
    // Fewer options written than the list needs, or none: left to the model.
    assert!(p["data_field"].get("enum").is_none());
    assert!(p["amenities"].get("enum").is_none());
}

#[test]
fn an_optional_number_takes_the_number_at_its_unit_or_what_it_counts() {
    let props = json!({
        "max_distance": {"type": "integer", "description": "Maximum distance (in miles) to search."},
        "prep_time": {"type": "integer", "description": "The longest preparation, in minutes."},
        "count": {"type": "integer", "description": "Number of events to return."},
        "trait_count": {"type": "integer", "description": "How many traits."},
        "weight": {"type": "integer", "description": "The weight in the scale's units."}
    });
    let (keys, p) = settle(
        "Within 10 miles, under 30 minutes, 5 units: ten major historical events and three personality traits",
        props,
    );
    assert_eq!(p["max_distance"]["enum"], json!([10]), "{p}");
    assert_eq!(p["prep_time"]["enum"], json!([30]));
    assert_eq!(p["count"]["enum"], json!([10]));
    assert_eq!(p["trait_count"]["enum"], json!([3]));
    // "in the scale's units" gives no unit.
    assert!(p["weight"].get("enum").is_none());
    assert_eq!(keys.len(), 4);
    // Two parameters counting the same thing take neither number.
    let (keys, _) = settle(
        "within 10 miles",
        json!({
            "radius": {"type": "integer", "description": "Radius (in miles)."},
            "max_distance": {"type": "integer", "description": "Distance (in miles)."}
        }),
    );
    assert!(keys.is_empty(), "{keys:?}");
}

#[test]
fn the_one_year_of_an_object_takes_the_one_year_written() {
    let (keys, p) = settle(
        "Turtles in the Mississippi river in 2020",
        json!({"year": {"type": "integer"}, "count": {"type": "integer"}}),
    );
    assert_eq!(keys, ["year"]);
    assert_eq!(p["year"]["enum"], json!([2020]));
    // Two years written, or two year parameters: neither is settled by this rule.
    let (keys, _) = settle(
        "from 2019, or else 2020",
        json!({"year": {"type": "integer"}}),
    );
    assert!(keys.is_empty());
    let (keys, _) = settle(
        "in 2020",
        json!({"year": {"type": "integer"}, "fiscal_year": {"type": "integer"}}),
    );
    assert!(keys.is_empty());
}

#[test]
fn a_range_settles_its_start_and_end() {
    let (keys, p) = settle(
        "the area under the curve from x = -2 to x = 3",
        json!({"start_x": {"type": "number"}, "end_x": {"type": "number"}, "given": {"type": "number"}}),
    );
    assert_eq!(keys, ["start_x", "end_x"]);
    assert_eq!(
        (&p["start_x"]["enum"], &p["end_x"]["enum"]),
        (&json!([-2]), &json!([3]))
    );
    // Required ones too; `between A and B`.
    let Value::Object(mut props) =
        json!({"from_year": {"type": "integer"}, "to_year": {"type": "integer"}})
    else {
        unreachable!()
    };
    let keys = Mentions::from_message("cases between 2012 and 2015")
        .settle(&mut props, &["from_year".to_owned(), "to_year".to_owned()]);
    assert_eq!(keys, ["from_year", "to_year"]);
    assert_eq!(props["to_year"]["enum"], json!([2015]));
    // Two starts, or a bound out of the schema's range: nothing.
    let (keys, _) = settle(
        "from 1 to 3",
        json!({"start": {"type": "integer"}, "min_x": {"type": "integer"}, "end": {"type": "integer"}}),
    );
    assert!(keys.is_empty());
    let (keys, _) = settle(
        "from 1 to 300",
        json!({"start": {"type": "integer"}, "end": {"type": "integer", "maximum": 100}}),
    );
    assert!(keys.is_empty());
}

#[test]
fn currencies_settle_as_codes_and_a_conversion_is_from_the_amount() {
    let props = json!({
        "base_currency": {"type": "string"},
        "target_currency": {"type": "string"},
        "amount": {"type": "integer"}
    });
    let (_, p) = settle(
        "How many Canadian dollars can I get for 500 US dollars?",
        props,
    );
    assert_eq!(p["base_currency"]["enum"], json!(["USD"]));
    assert_eq!(p["target_currency"]["enum"], json!(["CAD"]));
    let (keys, p) = settle(
        "What's Messi worth in euro?",
        json!({"currency": {"type": "string"}, "name": {"type": "string"}}),
    );
    assert_eq!(keys, ["currency"]);
    assert_eq!(p["currency"]["enum"], json!(["EUR"]));
    // A currency parameter with options of its own keeps them.
    let (keys, _) = settle(
        "in euro",
        json!({"currency": {"type": "string", "enum": ["usd", "eur"]}}),
    );
    assert!(keys.is_empty(), "{keys:?}");
}

#[test]
fn numbered_parameters_take_the_one_list_in_order() {
    let props = json!({"a": {"type": "number"}, "b": {"type": "number"}, "c": {"type": "number"}});
    let Value::Object(mut p) = props.clone() else {
        unreachable!()
    };
    let required = ["a".to_owned(), "b".to_owned(), "c".to_owned()];
    let keys = Mentions::from_message("coefficients 5, 20, and -25").settle(&mut p, &required);
    assert_eq!(keys, ["a", "b", "c"]);
    assert_eq!(
        (&p["b"]["enum"], &p["c"]["enum"]),
        (&json!([20]), &json!([-25]))
    );
    // Two lists of that length, or names that are no sequence: left to the model.
    let Value::Object(mut p) = props else {
        unreachable!()
    };
    let keys = Mentions::from_message("1, 2, 3 or 4, 5, 6").settle(&mut p, &required);
    assert!(keys.is_empty());
    let Value::Object(mut p) = json!({"n": {"type": "integer"}, "x": {"type": "integer"}}) else {
        unreachable!()
    };
    let keys =
        Mentions::from_message("of 40 and 50").settle(&mut p, &["n".to_owned(), "x".to_owned()]);
    assert!(keys.is_empty());
    let Value::Object(mut p) = json!({"num1": {"type": "integer"}, "num2": {"type": "integer"}})
    else {
        unreachable!()
    };
    let keys = Mentions::from_message("the GCD of 40 and 50").settle(&mut p, &["num1".to_owned()]);
    assert_eq!(keys, ["num1", "num2"]);
    assert_eq!(p["num2"]["enum"], json!([50]));
}
