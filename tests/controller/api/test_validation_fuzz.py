"""Whatever is written in a manifest, validation answers with FieldErrors and never raises."""

from __future__ import annotations

import copy
from typing import Any

from api_samples import good_manifests
from hypothesis import given, settings
from hypothesis import strategies as st
from joiner.api.compatibility import FieldWarning, readable_kubelet, validation_warnings
from joiner.api.validation import FieldError, apply_defaults, validate_object, validate_update

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=False),
    st.text(max_size=12),
    st.sampled_from(["In", "Gt", "10%", "@daily", "al2023@latest", "20Gi", "Never", "-1"]),
)
VALUES = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(
            st.text(max_size=8) | st.sampled_from(["key", "values"]), children, max_size=3
        ),
    ),
    max_leaves=8,
)
MANIFESTS = list(good_manifests().values())


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found += _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += _paths(child, (*prefix, index))
    return found


def _replace(obj: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    result = copy.deepcopy(obj)
    target = result
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return result


@settings(max_examples=300)
@given(manifest=st.sampled_from(MANIFESTS), data=st.data(), value=VALUES)
def test_any_replaced_field_gives_field_errors_not_exceptions(
    manifest: dict[str, Any], data: st.DataObject, value: Any
) -> None:
    path = data.draw(st.sampled_from(_paths(manifest)))
    mutated = _replace(manifest, path, value)
    errors = validate_object(mutated)
    assert all(isinstance(error, FieldError) and error.message for error in errors)
    warnings = validation_warnings(mutated)
    assert all(isinstance(warning, FieldWarning) and warning.message for warning in warnings)
    spec = mutated.get("spec") if isinstance(mutated, dict) else None
    readable_kubelet(spec.get("kubelet") if isinstance(spec, dict) else spec)
    apply_defaults(mutated)
    validate_update(apply_defaults(manifest), mutated)
