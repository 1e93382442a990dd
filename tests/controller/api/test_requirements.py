"""The requirements algebra [SPEC 3.6], checked against Kubernetes node-selector semantics."""

from functools import reduce

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from joiner.api import labels as wk
from joiner.api.requirements import (
    DOES_NOT_EXIST,
    EXISTS,
    GT,
    GTE,
    IN,
    LT,
    LTE,
    NOT_IN,
    Requirement,
    RequirementError,
    Requirements,
    labels_requirements,
)

KEY = "example.com/team"


def req(operator: str, *values: str, key: str = KEY, min_values: int | None = None) -> Requirement:
    return Requirement.new(key, operator, list(values), min_values)


def reqs(*requirements: Requirement) -> Requirements:
    return Requirements(requirements)


# --- a brute-force model: Kubernetes' own evaluation of one expression -----------


def _integer(label: str) -> int | None:
    digits = label[1:] if label[:1] in "+-" else label
    return int(label) if digits.isascii() and digits.isdigit() else None


def k8s_matches(operator: str, values: list[str], label: str | None) -> bool:
    """Whether a node whose label is ``label`` (None: absent) matches the expression."""
    if operator == IN:
        return label is not None and label in values
    if operator == NOT_IN:
        return label is None or label not in values
    if operator == EXISTS:
        return label is not None
    if operator == DOES_NOT_EXIST:
        return label is None
    number = None if label is None else _integer(label)
    if number is None:
        return False
    bound = int(values[0])
    return {GT: number > bound, LT: number < bound, GTE: number >= bound, LTE: number <= bound}[
        operator
    ]


def satisfied(requirement: Requirement, label: str | None) -> bool:
    return requirement.allows_absence() if label is None else requirement.has(label)


# --- one operator at a time --------------------------------------------------------

# Zero-padded spellings matter: "02" is the integer 2 to Gt/Lt but not the value "2" to
# In/NotIn, so NotIn [2] AND Gte 2 AND Lte 2 is satisfied by a node labelled "02".
PROBES = [
    None,
    "a",
    "b",
    "c",
    "1.5",
    *(str(i) for i in range(-2, 10)),
    *(f"0{i}" for i in range(10)),
]


@pytest.mark.parametrize(
    ("operator", "values"),
    [
        (IN, ["a", "3"]),
        (NOT_IN, ["a", "3"]),
        (EXISTS, []),
        (DOES_NOT_EXIST, []),
        (GT, ["3"]),
        (LT, ["3"]),
        (GTE, ["3"]),
        (LTE, ["3"]),
        (GT, ["-1"]),
        (LT, ["0"]),
    ],
)
@pytest.mark.parametrize("label", PROBES)
def test_each_operator_matches_like_kubernetes(
    operator: str, values: list[str], label: str | None
) -> None:
    assert satisfied(req(operator, *values), label) is k8s_matches(operator, values, label)


@pytest.mark.parametrize(
    ("operator", "values", "expected"),
    [
        (IN, ["a"], IN),
        (NOT_IN, ["a"], NOT_IN),
        (EXISTS, [], EXISTS),
        (DOES_NOT_EXIST, [], DOES_NOT_EXIST),
        (GT, ["1"], EXISTS),  # bounds read as Exists, as in Karpenter
        (IN, [], DOES_NOT_EXIST),
        (NOT_IN, [], EXISTS),  # NotIn [] is Exists
    ],
)
def test_operator_describes_the_value_set(operator: str, values: list[str], expected: str) -> None:
    assert req(operator, *values).operator == expected


def test_gt_n_is_gte_n_plus_one_and_lt_n_is_lte_n_minus_one() -> None:
    assert req(GT, "4") == req(GTE, "5")
    assert req(LT, "4") == req(LTE, "3")
    assert req(GTE, "0").has("0") and not req(GTE, "0").has("-1")
    assert req(LTE, "0").has("0") and not req(LTE, "0").has("1")


@pytest.mark.parametrize("value", ["abc", "5.0", "1e3", "5_0", " 5", "\u0665", ""])
def test_bounds_never_admit_non_integers(value: str) -> None:
    assert not req(GT, "-1000").has(value)
    assert not req(LT, "1000").has(value)


def test_bounds_admit_signed_integers() -> None:
    assert req(GT, "-5").has("-4")
    assert req(GT, "4").has("+5")
    assert not req(GT, "4").has("4")
    assert req(LT, "4").has("-100")


@pytest.mark.parametrize(
    ("operator", "values", "message"),
    [
        (GT, [], "Gt on 'example.com/team' needs exactly one integer value, got []"),
        (LT, ["1", "2"], "Lt on 'example.com/team' needs exactly one integer value"),
        (GTE, ["x"], "Gte on 'example.com/team' needs exactly one integer value, got ['x']"),
        (LTE, ["5_0"], "needs exactly one integer value"),
        (GT, [" 5"], "needs exactly one integer value"),
        ("Equals", ["a"], "unknown operator 'Equals' on 'example.com/team'"),
    ],
)
def test_bad_requirements_are_rejected(operator: str, values: list[str], message: str) -> None:
    with pytest.raises(RequirementError, match=message.replace("[", r"\[").replace("]", r"\]")):
        Requirement.new(KEY, operator, values)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"operator": IN, "values": ["a"]}, "needs a string 'key'"),
        ({"key": "", "operator": IN}, "needs a string 'key'"),
        ({"key": KEY, "values": ["a"]}, "needs a string 'operator'"),
        ({"key": KEY, "operator": IN, "values": "abc"}, "values of 'example.com/team' must be"),
        ({"key": KEY, "operator": IN, "values": ["a"], "minValues": "2"}, "minValues of"),
        ({"key": KEY, "operator": IN, "values": ["a"], "minValues": True}, "minValues of"),
        ("team In a", "a requirement must be a mapping"),
    ],
)
def test_from_dict_names_the_bad_field(raw: object, message: str) -> None:
    with pytest.raises(RequirementError, match=message):
        Requirement.from_dict(raw)  # type: ignore[arg-type]


def test_beta_keys_are_normalised() -> None:
    assert req(IN, "arm64", key="beta.kubernetes.io/arch").key == wk.ARCH
    assert req(IN, "z", key="failure-domain.beta.kubernetes.io/zone").key == wk.ZONE
    assert list(Requirements.from_labels({"beta.kubernetes.io/os": "linux"})) == [wk.OS]


# --- intersection ------------------------------------------------------------------


def dicts(requirement: Requirement) -> list[dict]:
    return [{k: v for k, v in d.items() if k != "key"} for d in requirement.to_dicts()]


INTERSECTIONS = [
    (req(IN, "a", "b"), req(IN, "b", "c"), [{"operator": IN, "values": ["b"]}]),
    (req(IN, "a", "b"), req(NOT_IN, "b"), [{"operator": IN, "values": ["a"]}]),
    (req(NOT_IN, "a"), req(NOT_IN, "b"), [{"operator": NOT_IN, "values": ["a", "b"]}]),
    (req(IN, "a"), req(EXISTS), [{"operator": IN, "values": ["a"]}]),
    (req(NOT_IN, "a"), req(DOES_NOT_EXIST), [{"operator": DOES_NOT_EXIST}]),
    (req(DOES_NOT_EXIST), req(DOES_NOT_EXIST), [{"operator": DOES_NOT_EXIST}]),
    (req(EXISTS), req(EXISTS), [{"operator": EXISTS}]),
    # Exists AND NotIn still needs the label.
    (
        req(EXISTS),
        req(NOT_IN, "a"),
        [{"operator": NOT_IN, "values": ["a"]}, {"operator": EXISTS}],
    ),
    # Contradictions are unsatisfiable, not DoesNotExist.
    (req(IN, "a"), req(IN, "b"), [{"operator": EXISTS}, {"operator": DOES_NOT_EXIST}]),
    (req(EXISTS), req(DOES_NOT_EXIST), [{"operator": EXISTS}, {"operator": DOES_NOT_EXIST}]),
    (req(IN, "a"), req(DOES_NOT_EXIST), [{"operator": EXISTS}, {"operator": DOES_NOT_EXIST}]),
    # Bounds.
    (
        req(GT, "2"),
        req(LT, "6"),
        [{"operator": GT, "values": ["2"]}, {"operator": LT, "values": ["6"]}],
    ),
    (req(GT, "2"), req(GT, "4"), [{"operator": GT, "values": ["4"]}]),
    (req(LT, "2"), req(LTE, "4"), [{"operator": LT, "values": ["2"]}]),
    (req(GT, "3"), req(LT, "4"), [{"operator": EXISTS}, {"operator": DOES_NOT_EXIST}]),
    (
        req(GTE, "3"),
        req(LTE, "3"),
        [{"operator": GT, "values": ["2"]}, {"operator": LT, "values": ["4"]}],
    ),
    (req(IN, "1", "5", "9", "a"), req(GT, "4"), [{"operator": IN, "values": ["5", "9"]}]),
    (req(IN, "a", "b"), req(LT, "10"), [{"operator": EXISTS}, {"operator": DOES_NOT_EXIST}]),
    (
        req(NOT_IN, "5"),
        req(GT, "3"),
        [{"operator": NOT_IN, "values": ["5"]}, {"operator": GT, "values": ["3"]}],
    ),
    (req(DOES_NOT_EXIST), req(GT, "3"), [{"operator": EXISTS}, {"operator": DOES_NOT_EXIST}]),
]


@pytest.mark.parametrize(("a", "b", "expected"), INTERSECTIONS)
def test_intersection_table(a: Requirement, b: Requirement, expected: list[dict]) -> None:
    assert dicts(a.intersection(b)) == expected
    assert dicts(b.intersection(a)) == expected


def test_min_values_intersection_keeps_the_larger() -> None:
    a = req(IN, "a", "b", "c", min_values=2)
    b = req(IN, "a", "b", "c", "d", min_values=3)
    assert a.intersection(b).min_values == 3
    assert a.intersection(req(EXISTS)).min_values == 2
    assert req(EXISTS).intersection(b).min_values == 3
    assert req(EXISTS).intersection(req(EXISTS)).min_values is None
    assert a.intersection(b).to_dicts() == [
        {"key": KEY, "operator": IN, "values": ["a", "b", "c"], "minValues": 3}
    ]


def test_requirements_add_intersects_on_the_same_key() -> None:
    requirements = reqs(req(IN, "a", "b"))
    requirements.add(req(NOT_IN, "a"))
    assert requirements[KEY] == req(IN, "b")
    assert len(requirements) == 1
    assert requirements.get_requirement("undefined").operator == EXISTS
    assert requirements.get_requirement("undefined").has("anything")


def test_intersection_leaves_both_sides_unchanged() -> None:
    a = reqs(req(IN, "a", "b"))
    b = reqs(req(IN, "b"), req(IN, "x", key="other"))
    merged = a.intersection(b)
    assert merged == reqs(req(IN, "b"), req(IN, "x", key="other"))
    assert a == reqs(req(IN, "a", "b"))
    assert b == reqs(req(IN, "b"), req(IN, "x", key="other"))


# --- compatible and intersects -------------------------------------------------------


def test_custom_keys_must_be_defined_unless_only_excluded() -> None:
    pool = reqs(req(IN, "x", key="defined"))
    assert (
        pool.compatible(reqs(req(IN, "a"))) == 'label "example.com/team" does not have known values'
    )
    assert pool.compatible(reqs(req(EXISTS))) is not None
    assert pool.compatible(reqs(req(GT, "1"))) is not None
    assert pool.compatible(reqs(req(NOT_IN, "a"))) is None
    assert pool.compatible(reqs(req(DOES_NOT_EXIST))) is None
    # Exists AND NotIn needs the label, so it is not merely an exclusion.
    assert pool.compatible(reqs(req(EXISTS)).add(req(NOT_IN, "a"))) is not None
    # With the key defined, values decide.
    team_pool = reqs(req(IN, "a", "b"))
    assert team_pool.compatible(reqs(req(IN, "b"))) is None
    assert team_pool.compatible(reqs(req(IN, "c"))) is not None


def test_well_known_keys_may_be_undefined() -> None:
    pool = reqs()
    pod = reqs(req(IN, "us-west-2a", key=wk.ZONE), req(IN, "spot", key=wk.CAPACITY_TYPE))
    assert pool.compatible(pod) is None
    # ...unless the caller says otherwise.
    assert pool.compatible(pod, allow_undefined=frozenset()) is not None
    # Keys only the pool defines do not constrain the pod.
    assert reqs(req(IN, "x", key="only-pool")).compatible(reqs()) is None


def test_intersects_reports_the_first_conflict() -> None:
    pool = reqs(req(IN, "a", key="k1"), req(IN, "x", key="k2"))
    pod = reqs(req(IN, "b", key="k1"), req(IN, "y", key="k2"))
    assert pool.intersects(pod) == "key k1, k1 In [b] not in k1 In [a]"
    assert pool.is_compatible(pod) is False
    assert pool.intersects(reqs(req(IN, "a", key="k1"))) is None


def test_both_sides_accepting_absence_intersect() -> None:
    assert reqs(req(NOT_IN, "a")).intersects(reqs(req(DOES_NOT_EXIST))) is None
    assert reqs(req(DOES_NOT_EXIST)).intersects(reqs(req(DOES_NOT_EXIST))) is None
    assert reqs(req(EXISTS)).intersects(reqs(req(DOES_NOT_EXIST))) is not None
    assert reqs(req(IN, "a")).intersects(reqs(req(DOES_NOT_EXIST))) is not None


# --- pods, labels, nodes --------------------------------------------------------------


def pod(node_selector: dict | None = None, terms: list[list[dict]] | None = None) -> dict:
    spec: dict = {}
    if node_selector is not None:
        spec["nodeSelector"] = node_selector
    if terms is not None:
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": t} for t in terms]
                }
            }
        }
    return {"metadata": {"name": "p"}, "spec": spec}


def test_for_pod_merges_node_selector_and_one_required_term() -> None:
    terms = [
        [{"key": "failure-domain.beta.kubernetes.io/zone", "operator": IN, "values": ["a", "b"]}],
        [{"key": wk.ZONE, "operator": IN, "values": ["c"]}],
    ]
    p = pod({"beta.kubernetes.io/arch": "arm64", wk.ZONE: "b"}, terms)
    assert Requirements.for_pod(p).to_dicts() == [
        {"key": wk.ARCH, "operator": IN, "values": ["arm64"]},
        {"key": wk.ZONE, "operator": IN, "values": ["b"]},
    ]
    second = Requirements.for_pod(p, required_term=1)
    assert second[wk.ZONE].is_unsatisfiable()
    assert Requirements.for_pod(p, required_term=2) == Requirements.from_labels(
        {wk.ARCH: "arm64", wk.ZONE: "b"}
    )


def test_for_pod_without_constraints_is_empty() -> None:
    assert len(Requirements.for_pod({"spec": {}})) == 0
    assert len(Requirements.for_pod({})) == 0
    match_fields_only = {
        "spec": {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name"}]}]
                    }
                }
            }
        }
    }
    assert len(Requirements.for_pod(match_fields_only)) == 0


@pytest.mark.parametrize(
    ("requirement", "node_labels", "expected"),
    [
        (req(IN, "a"), {KEY: "a"}, True),
        (req(IN, "a"), {KEY: "b"}, False),
        (req(IN, "a"), {}, False),
        (req(NOT_IN, "a"), {}, True),
        (req(NOT_IN, "a"), {KEY: "a"}, False),
        (req(EXISTS), {}, False),
        (req(EXISTS), {KEY: ""}, True),
        (req(DOES_NOT_EXIST), {}, True),
        (req(DOES_NOT_EXIST), {KEY: "a"}, False),
        (req(GT, "3"), {}, False),
        (req(GT, "3"), {KEY: "4"}, True),
        (req(GT, "3"), {KEY: "four"}, False),
        (req(LT, "3"), {KEY: "2"}, True),
    ],
)
def test_satisfied_by_labels(requirement: Requirement, node_labels: dict, expected: bool) -> None:
    assert reqs(requirement).satisfied_by_labels({"other": "x", **node_labels}) is expected


def test_from_labels_requires_exactly_those_values() -> None:
    requirements = Requirements.from_labels({"team": "a", "tier": 1})  # type: ignore[dict-item]
    assert requirements.to_dicts() == [
        {"key": "team", "operator": IN, "values": ["a"]},
        {"key": "tier", "operator": IN, "values": ["1"]},
    ]
    assert requirements.satisfied_by_labels({"team": "a", "tier": "1", "x": "y"})
    assert not requirements.satisfied_by_labels({"team": "a"})
    assert len(Requirements.from_labels(None)) == 0


def test_labels_come_from_custom_requirements_only() -> None:
    requirements = reqs(
        req(IN, "b", "a", key="team"),
        req(EXISTS, key="has-gpu"),
        req(GT, "5", key="generation"),
        req(NOT_IN, "x", key="excluded"),
        req(DOES_NOT_EXIST, key="absent"),
        req(IN, "us-west-2a", key=wk.ZONE),
        req(IN, "h", key=wk.HOSTNAME),
        req(IN, "x", key="karpenter.sh/custom"),
        req(IN, "y", key="node.kubernetes.io/lifecycle"),
    )
    requirements.add(req(EXISTS, key="excluded"))
    requirements.add(req(NOT_IN, "0", "1", key="has-gpu"))
    assert requirements.labels() == {
        "team": "a",
        "has-gpu": "2",
        "generation": "6",
        "excluded": "0",
        "node.kubernetes.io/lifecycle": "y",
    }


def test_to_dicts_is_sorted_and_round_trips() -> None:
    raw = [
        {"key": "b", "operator": GTE, "values": ["3"]},
        {"key": "a", "operator": NOT_IN, "values": ["y", "x"], "minValues": 2},
        {"key": "c", "operator": DOES_NOT_EXIST},
    ]
    requirements = Requirements.from_node_selector_requirements(raw)
    assert requirements.to_dicts() == [
        {"key": "a", "operator": NOT_IN, "values": ["x", "y"], "minValues": 2},
        {"key": "b", "operator": GT, "values": ["2"]},
        {"key": "c", "operator": DOES_NOT_EXIST},
    ]
    assert Requirements.from_node_selector_requirements(requirements.to_dicts()) == requirements


# --- properties over a small universe -----------------------------------------------

UNIVERSE = ["1", "2", "3", "4", "5", "6", "a", "b"]
_expression = st.one_of(
    st.tuples(
        st.sampled_from([IN, NOT_IN]),
        st.lists(st.sampled_from(UNIVERSE), min_size=1, max_size=4, unique=True),
    ),
    st.tuples(st.sampled_from([EXISTS, DOES_NOT_EXIST]), st.just([])),
    st.tuples(st.sampled_from([GT, LT, GTE, LTE]), st.integers(0, 7).map(lambda n: [str(n)])),
)
_expressions = st.lists(_expression, min_size=1, max_size=3)
_min_values = st.one_of(st.none(), st.integers(1, 3))


def build(expressions: list[tuple[str, list[str]]], min_values: int | None = None) -> Requirement:
    parts = [Requirement.new(KEY, op, values) for op, values in expressions]
    parts[0] = Requirement.new(KEY, expressions[0][0], expressions[0][1], min_values)
    return reduce(Requirement.intersection, parts)


def model(expressions: list[tuple[str, list[str]]], label: str | None) -> bool:
    return all(k8s_matches(op, values, label) for op, values in expressions)


@settings(max_examples=300)
@given(_expressions, _expressions)
def test_intersection_is_logical_and(a: list, b: list) -> None:
    merged = build(a).intersection(build(b))
    for label in PROBES:
        assert satisfied(merged, label) is model(a + b, label), label


@given(_expressions, _min_values, _expressions, _min_values)
def test_intersection_is_commutative(a: list, ma: int | None, b: list, mb: int | None) -> None:
    assert build(a, ma).intersection(build(b, mb)) == build(b, mb).intersection(build(a, ma))


@given(_expressions, _expressions, _expressions)
def test_intersection_is_associative(a: list, b: list, c: list) -> None:
    ra, rb, rc = build(a), build(b), build(c)
    assert ra.intersection(rb).intersection(rc) == ra.intersection(rb.intersection(rc))


@given(_expressions, _min_values)
def test_intersection_is_idempotent(a: list, ma: int | None) -> None:
    requirement = build(a, ma)
    assert requirement.intersection(requirement) == requirement


@given(_expressions, _expressions)
def test_intersection_never_widens(a: list, b: list) -> None:
    ra, merged = build(a), build(a).intersection(build(b))
    for label in PROBES:
        assert not satisfied(merged, label) or satisfied(ra, label)


@given(_expressions, _min_values)
def test_to_dicts_round_trips(a: list, ma: int | None) -> None:
    requirement = build(a, ma)
    back = Requirements.from_node_selector_requirements(requirement.to_dicts())
    assert back[KEY] == requirement
    for label in PROBES:
        assert satisfied(back[KEY], label) is model(a, label)


@settings(max_examples=300)
@given(_expressions, _expressions)
def test_intersects_is_symmetric_and_matches_the_model(a: list, b: list) -> None:
    ra, rb = reqs(build(a)), reqs(build(b))
    satisfiable = any(model(a + b, label) for label in PROBES)
    assert (ra.intersects(rb) is None) is satisfiable
    assert (rb.intersects(ra) is None) is satisfiable
    assert ra.is_intersecting(rb) is satisfiable
    assert ra.is_compatible(rb) is satisfiable
    # With every key defined on both sides, compatible is symmetric too.
    assert (ra.compatible(rb) is None) is (rb.compatible(ra) is None) is satisfiable


@given(_expressions)
def test_compatible_with_an_undefined_custom_key(a: list) -> None:
    pod_requirements = reqs(build(a))
    needs_label = not model(a, None)
    assert (reqs().compatible(pod_requirements) is not None) is needs_label
    assert reqs().is_compatible(pod_requirements) is not needs_label


def test_zero_padded_integers_satisfy_bounds_but_not_value_sets() -> None:
    requirement = req(GTE, "2").intersection(req(LTE, "2")).intersection(req(NOT_IN, "2"))
    assert not requirement.has("2")
    assert requirement.has("02")
    assert reqs(req(GTE, "2")).intersects(reqs(req(LTE, "2"))) is None
    assert reqs(req(GTE, "2")).is_intersecting(reqs(requirement))


@settings(max_examples=50)
@given(_expressions, st.sampled_from(PROBES))
def test_satisfied_by_labels_matches_the_model(a: list, label: str | None) -> None:
    node_labels = {} if label is None else {KEY: label}
    assert reqs(build(a)).satisfied_by_labels(node_labels) is model(a, label)


def test_node_labels_requirements_are_shared_by_dict_and_by_content() -> None:
    """One read-only Requirements per labels dict (a node's, as read), and per content."""
    labels = {wk.HOSTNAME: "n1", KEY: "a"}
    first = labels_requirements(labels)
    assert labels_requirements(labels) is first
    assert labels_requirements(dict(labels)) is first  # same content, another dict
    relabelled = labels_requirements({**labels, KEY: "b"})  # a changed node: a new dict
    assert relabelled.get_requirement(KEY).has("b")
    assert not relabelled.get_requirement(KEY).has("a")
    assert first == Requirements.from_labels(labels)
