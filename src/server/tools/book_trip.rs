//! `book_trip {from, to}`: three form rounds, each sealed into a new
//! `requestState`: choose an itinerary the tool computed, give passenger
//! details (email, date, integer), confirm. A confirmed booking happens
//! once per originating request.

use std::sync::LazyLock;

use serde_json::{Value, json};

use super::{Ask, Ctx, Effect, FormSpec, Step, ToolError, ToolResult, arg, refused};
use crate::protocol::ElicitAction;
use crate::server::conversation::{Conversation, Expect};

const ITINERARY: &str = "itinerary";
const PASSENGER: &str = "passenger";
const CONFIRM: &str = "confirm";

static PASSENGER_FORM: LazyLock<FormSpec> = LazyLock::new(|| {
    FormSpec::new(json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "title": "Passenger name", "minLength": 1, "maxLength": 100},
            "email": {"type": "string", "title": "Email", "format": "email"},
            "date": {"type": "string", "title": "Travel date", "format": "date"},
            "bags": {"type": "integer", "title": "Checked bags", "minimum": 0, "maximum": 5, "default": 1}
        },
        "required": ["name", "email", "date", "bags"]
    }))
});

static CONFIRM_FORM: LazyLock<FormSpec> = LazyLock::new(|| {
    FormSpec::new(json!({
        "type": "object",
        "properties": {"confirm": {"type": "boolean", "title": "Book it?", "default": false}},
        "required": ["confirm"]
    }))
});

fn fnv(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.bytes().chain([0xff]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// The itineraries this trip offers: `(id, title)`, deterministic in from/to.
fn itineraries(from: &str, to: &str) -> Vec<(String, String)> {
    const HUBS: [&str; 6] = [
        "Frankfurt",
        "Amsterdam",
        "Zurich",
        "Vienna",
        "Madrid",
        "Oslo",
    ];
    let h = fnv(&[from, to]);
    (0..3u64)
        .map(|i| {
            let x = h.rotate_left((i * 17) as u32);
            let hub = HUBS[(x % HUBS.len() as u64) as usize];
            let hour = 6 + (x >> 8) % 14;
            let price = 90 + (x >> 16) % 400;
            (
                format!("it-{}", i + 1),
                format!("{from} → {to} via {hub}, departs {hour:02}:00, {price} EUR"),
            )
        })
        .collect()
}

fn itinerary_form(ctx: &Ctx<'_>) -> FormSpec {
    let options: Vec<Value> = itineraries(arg(ctx.args, "from"), arg(ctx.args, "to"))
        .into_iter()
        .map(|(id, title)| json!({"const": id, "title": title}))
        .collect();
    FormSpec::new(json!({
        "type": "object",
        "properties": {"choice": {"type": "string", "title": "Itinerary", "oneOf": options}},
        "required": ["choice"]
    }))
}

/// The expected answer under `key`.
pub fn expect(ctx: &Ctx<'_>, key: &str) -> Option<Expect> {
    match key {
        ITINERARY => Some(itinerary_form(ctx).expect()),
        PASSENGER => Some(PASSENGER_FORM.expect()),
        CONFIRM => Some(CONFIRM_FORM.expect()),
        _ => None,
    }
}

/// One step: asks the first unanswered round.
pub async fn step(ctx: &Ctx<'_>, conv: &Conversation) -> Result<Step, ToolError> {
    let (from, to) = (arg(ctx.args, "from"), arg(ctx.args, "to"));
    if let Some(a) = conv.refusal() {
        return Ok(Step::Done(refused(&format!("Booking {from} → {to}"), a)));
    }
    if conv.action(ITINERARY).is_none() {
        return Ok(Step::Ask(vec![Ask::form(
            ITINERARY,
            format!("Round 1 of 3: choose an itinerary from {from} to {to}."),
            &itinerary_form(ctx),
        )]));
    }
    if conv.action(PASSENGER).is_none() {
        return Ok(Step::Ask(vec![Ask::form(
            PASSENGER,
            "Round 2 of 3: passenger details.".into(),
            &PASSENGER_FORM,
        )]));
    }
    let choice = conv.field_str(ITINERARY, "choice").unwrap_or("");
    let title = itineraries(from, to)
        .into_iter()
        .find(|(id, _)| id == choice)
        .map_or_else(|| choice.to_owned(), |(_, t)| t);
    if conv.action(CONFIRM).is_none() {
        return Ok(Step::Ask(vec![Ask::form(
            CONFIRM,
            format!("Round 3 of 3: book {title}?"),
            &CONFIRM_FORM,
        )]));
    }
    let yes = conv
        .content(CONFIRM)
        .and_then(|c| c.get("confirm"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if conv.action(CONFIRM) != Some(ElicitAction::Accept) || !yes {
        return Ok(Step::Done(ToolResult::ok(
            "Booking not confirmed; nothing was booked.",
        )));
    }
    let name = conv.field_str(PASSENGER, "name").unwrap_or("");
    let date = conv.field_str(PASSENGER, "date").unwrap_or("");
    let mut r = ToolResult::ok(format!("Booked {title} for {name} on {date}."));
    r.structured = Some(json!({
        "itinerary": choice,
        "passenger": conv.content(PASSENGER),
    }));
    Ok(Step::Act(Effect::TripBooking, r))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn itineraries_are_deterministic_and_distinct_ids() {
        let a = itineraries("Berlin", "Rome");
        assert_eq!(a, itineraries("Berlin", "Rome"));
        assert_eq!(a.len(), 3);
        assert_ne!(a, itineraries("Rome", "Berlin"));
        assert_eq!(a[2].0, "it-3");
    }
}
