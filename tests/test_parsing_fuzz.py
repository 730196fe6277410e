"""Fuzz parse_action with seeded mutations of valid actions.

Beyond "never raises", structural mutations have a known answer (wrapping keeps
the shot, duplication is ambiguous, truncation is never ok), so the fuzz can
catch a parser that quietly accepts or rejects the wrong things.
"""

from __future__ import annotations

import json
import random

import pytest

from poolbench_data.protocol.parsing import PARSE_STATUSES, parse_action
from poolbench_data.core.records import PHI_RANGE, V0_RANGE, Scenario
from poolbench_data.core.table import POCKET_IDS, geometry

N_CASES = 5000
SEED = 20240611

SCENARIO = Scenario.create("s000", "open", 0,
                           {"cue": (0.5, 0.3), "1": (0.7, 1.0), "9": (0.3, 1.5), "8": (0.8, 1.8)})
ON_TABLE = {b.id for b in SCENARIO.object_balls}

JUNK_VALUES = ["", "74.2 deg", "NaN", "nine", None, True, False, [], {}, [1, 2, 3], {"x": 1.07, "y": 2.13},
               {"nested": {"deeper": [1, {"x": None}]}}, 1e308, -1e308, 10 ** 30, -0.0, 0, "١٢", "🎱", "\u202e1",
               "\x00", "1" * 200]
RAW_NUMBERS = ["NaN", "Infinity", "-Infinity", "1e999", "-1e999", "1" + "0" * 500, "1e-400", "0", "-0", "12.0000001",
               "2", "1e1", "1E+1", "007", ".5", "5.", "+5", "0x10"]
INSERT_CHARS = list('{}[]",:\\\'`\n\t ') + ["\x00", "\ufeff", "é", "🎱", "</think>", "<think>", "```", "NaN", "1e999"]


def random_action(rng: random.Random) -> dict:
    pocket = geometry().pocket(rng.choice(POCKET_IDS))
    return {
        "target_ball": rng.choice(sorted(ON_TABLE)),
        "target_pocket": [round(pocket.x + rng.uniform(-0.1, 0.1), 4), round(pocket.y + rng.uniform(-0.1, 0.1), 4)],
        "aim_angle_deg": round(rng.uniform(*PHI_RANGE), rng.choice([0, 1, 2, 6])),
        "cue_speed": round(rng.uniform(*V0_RANGE), rng.choice([0, 1, 2])),
    }


def dump(obj, rng: random.Random) -> str:
    style = rng.randrange(4)
    if style == 0:
        return json.dumps(obj)
    if style == 1:
        return json.dumps(obj, indent=rng.choice([1, 2, 4]))
    if style == 2:
        return json.dumps(obj, separators=(",", ":"))
    return json.dumps(obj, ensure_ascii=False)


# --- mutations: each returns text ------------------------------------------------

def truncate(t, rng):
    return t[:rng.randrange(len(t) + 1)]


def insert(t, rng):
    i = rng.randrange(len(t) + 1)
    return t[:i] + rng.choice(INSERT_CHARS) + t[i:]


def insert_random_bytes(t, rng):
    i = rng.randrange(len(t) + 1)
    junk = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8))).decode("latin-1")
    return t[:i] + junk + t[i:]


def delete(t, rng):
    i = rng.randrange(max(len(t), 1))
    return t[:i] + t[i + rng.randint(1, 5):]


def loads_or_none(t):
    try:
        return json.loads(t)
    except (ValueError, RecursionError):
        return None


def wrong_type(t, rng):
    obj = loads_or_none(t)
    if isinstance(obj, dict) and obj:
        obj[rng.choice(list(obj))] = rng.choice(JUNK_VALUES)
        return json.dumps(obj, ensure_ascii=rng.random() < 0.5)
    return t


def raw_number(t, rng):
    for key in ('"aim_angle_deg": ', '"cue_speed": ', '"target_pocket": ['):
        if key in t and rng.random() < 0.5:
            i = t.index(key) + len(key)
            j = i
            while j < len(t) and t[j] in "-+.0123456789eE":
                j += 1
            return t[:i] + rng.choice(RAW_NUMBERS) + t[j:]
    return t


def nest(t, rng):
    return rng.choice(['{"action": %s}', '{"answer": [%s]}', '{"a": {"b": %s}}']) % t


def fence(t, rng):
    return rng.choice(["```json\n%s\n```", "```\n%s\n```", "```json\n%s", "`%s`", "Answer:\n```json\n%s\n```\nDone."]) % t


def think(t, rng):
    return rng.choice(["<think>%s</think>" % t, "<think>plan</think>%s", "<think>%s", "reasoning</think>%s",
                       "%s<think>", "<think>a</think>b<think>%s</think>"]).replace("%s", t)


def arrayify(t, rng):
    return rng.choice(["[%s]", "[%s, %s]", "[[%s]]"]).replace("%s", t)


def duplicate(t, rng):
    return t + rng.choice(["\n", " ", "\nor\n", ""]) + t


def drop_or_dup_key(t, rng):
    obj = loads_or_none(t)
    if not isinstance(obj, dict) or not obj:
        return t
    key = rng.choice(list(obj))
    if rng.random() < 0.5:
        del obj[key]
        return json.dumps(obj)
    return json.dumps(obj)[:-1] + f', {json.dumps(key)}: 1}}'


def quotes_and_commas(t, rng):
    return t.replace('"', "'") if rng.random() < 0.5 else t.rstrip("}") + ",}"


def unicode_noise(t, rng):
    return rng.choice(["\ufeff", "\u200b", "🎱 ", "Выстрел: ", "\u202e"]) + t + rng.choice(["", " ✓", "\ud800", "\x00"])


def huge(t, rng):
    return rng.choice(["[" * rng.randint(30, 3000), "{" * rng.randint(30, 3000), '{"a":' * rng.randint(30, 300),
                       "[1]," * rng.randint(100, 2000), " " * 10000]) + t


MUTATIONS = [truncate, insert, insert_random_bytes, delete, wrong_type, raw_number, nest, fence, think, arrayify,
             duplicate, drop_or_dup_key, quotes_and_commas, unicode_noise, huge]


def check(text) -> str:
    r = parse_action(text, SCENARIO)
    assert r.status in PARSE_STATUSES, r
    assert isinstance(r.message, str)
    assert (r.status == "ok") == (r.shot is not None), r
    if r.shot is not None:
        s = r.shot
        assert 0.0 <= s.phi < 360.0 and V0_RANGE[0] <= s.V0 <= V0_RANGE[1]
        assert s.target_ball in ON_TABLE and s.target_pocket in POCKET_IDS
    return r.status


def test_fuzzed_responses_never_raise_and_get_a_known_status():
    rng = random.Random(SEED)
    seen = set()
    for _ in range(N_CASES):
        text = dump(random_action(rng), rng)
        for mutate in rng.sample(MUTATIONS, rng.randint(1, 3)):
            text = mutate(text, rng)
        seen.add(check(text))
    # The generator must actually exercise the parser's branches, not just one of them.
    assert {"ok", "invalid-json", "multiple-json", "not-object", "missing-field", "non-numeric", "non-finite",
            "out-of-range", "no-json"} <= seen, seen


def test_wrapping_a_valid_action_keeps_the_same_shot():
    rng = random.Random(SEED + 1)
    for _ in range(500):
        text = dump(random_action(rng), rng)
        base = parse_action(text, SCENARIO)
        assert base.status == "ok", (text, base)
        wrapped = rng.choice([fence, unicode_noise])(text, rng) if rng.random() < 0.5 else \
            rng.choice(["<think>%s</think>\n", "Sure. ", "plan</think>"]).replace("%s", text) + text
        r = parse_action(wrapped, SCENARIO)
        assert r.status == "ok" and r.shot == base.shot, (wrapped, r)


def test_structural_mutations_have_known_statuses():
    rng = random.Random(SEED + 2)
    for _ in range(500):
        text = dump(random_action(rng), rng)
        assert check(duplicate(text, rng)) == "multiple-json"
        assert check(arrayify(text, rng)) == "not-object"
        assert check(nest(text, rng)) == "missing-field"
        cut = text[:rng.randrange(len(text))]  # strictly shorter: the object never closes
        assert check(cut) in {"empty", "no-json", "invalid-json"}, cut
        obj = json.loads(text)
        del obj[rng.choice(list(obj))]
        assert check(json.dumps(obj)) == "missing-field"


def test_parsing_is_deterministic():
    rng = random.Random(SEED + 3)
    for _ in range(300):
        text = dump(random_action(rng), rng)
        for mutate in rng.sample(MUTATIONS, 2):
            text = mutate(text, rng)
        assert parse_action(text, SCENARIO) == parse_action(text, SCENARIO)


try:
    from hypothesis import given, settings
    from hypothesis import strategies as st
except ImportError:  # optional dev dependency
    given = None


@pytest.mark.skipif(given is None, reason="hypothesis is not installed")
def test_arbitrary_text_never_raises():
    json_values = st.recursive(
        st.none() | st.booleans() | st.floats(allow_nan=True, allow_infinity=True) | st.integers() | st.text(max_size=8),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
            st.sampled_from(["target_ball", "target_pocket", "aim_angle_deg", "cue_speed", "x"]) | st.text(max_size=4),
            inner, max_size=5),
        max_leaves=12)

    @settings(max_examples=300, deadline=None, derandomize=True, database=None)
    @given(st.text(max_size=300) | json_values.map(json.dumps), st.text(max_size=20))
    def run(body, noise):
        check(body)
        check(noise + body + noise)

    run()
