"""A deliberately small JSON Schema checker for the kit's own output schemas.

The kit must decide, independently of the adapter, whether an output satisfies the schema it sent,
without pulling a JSON Schema engine into every adapter's test environment. The kit only ever
sends schemas it wrote itself, so this checker supports exactly the keywords those use: ``type``,
``properties``, ``required``, ``additionalProperties``, ``items``, ``enum`` and ``const``. Any
other keyword is refused loudly rather than ignored.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SUPPORTED_KEYWORDS", "satisfies"]

SUPPORTED_KEYWORDS = frozenset(
    {"type", "properties", "required", "additionalProperties", "items", "enum", "const"}
)


def _is_type(value: Any, name: str) -> bool:
    if name == "object":
        return isinstance(value, dict)
    if name == "array":
        return isinstance(value, list)
    if name == "string":
        return isinstance(value, str)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "null":
        return value is None
    if name == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    raise ValueError(f"unknown JSON Schema type {name!r}")


def _same(a: Any, b: Any) -> bool:
    # JSON equality: booleans are not numbers, 1 == 1.0.
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    return bool(a == b)


def satisfies(schema: Any, value: Any) -> bool:
    """Whether ``value`` satisfies ``schema`` (a schema written with the supported keywords)."""
    if schema is True:
        return True
    if schema is False:
        return False
    if not isinstance(schema, dict):
        raise ValueError(f"a JSON Schema must be an object or a boolean, not {schema!r}")
    unknown = set(schema) - SUPPORTED_KEYWORDS
    if unknown:
        raise ValueError(f"the kit's schema checker does not support {sorted(unknown)}")
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_is_type(value, name) for name in names):
            return False
    if "enum" in schema and not any(_same(value, option) for option in schema["enum"]):
        return False
    if "const" in schema and not _same(value, schema["const"]):
        return False
    if isinstance(value, dict):
        properties: dict[str, Any] = schema.get("properties", {})
        if any(name not in value for name in schema.get("required", [])):
            return False
        additional = schema.get("additionalProperties", True)
        for key, item in value.items():
            if key in properties:
                if not satisfies(properties[key], item):
                    return False
            elif not satisfies(additional, item):
                return False
    if isinstance(value, list) and "items" in schema:
        return all(satisfies(schema["items"], item) for item in value)
    return True
