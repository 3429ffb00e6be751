# SPDX-License-Identifier: MIT
"""What the fencectl tests share: a list of failed checks, and the check of a
JSON value against a documented schema, member by member.

A schema is a type (int, str, bool, float for any number), a dict of
member -> schema (every member present, nothing undocumented), a one-item
list [schema] for a list of such values, or a function(value, path) for
values with more than one shape.
"""

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL", what)
    return cond


def validate(value, schema, path="$", optional=None):
    """@optional: member -> schema of members that may be absent, at any depth."""
    optional = optional or {}
    if callable(schema) and not isinstance(schema, type):
        schema(value, path)
    elif isinstance(schema, list):
        check(isinstance(value, list), f"{path} is a list")
        for i, v in enumerate(value if isinstance(value, list) else []):
            validate(v, schema[0], f"{path}[{i}]", optional)
    elif isinstance(schema, dict):
        check(isinstance(value, dict), f"{path} is an object")
        if not isinstance(value, dict):
            return
        for k, s in schema.items():
            check(k in value, f"{path}.{k} present")
            if k in value:
                validate(value[k], s, f"{path}.{k}", optional)
        for k in value:
            check(k in schema or k in optional, f"{path}.{k} documented")
            if k in optional and k not in schema:
                validate(value[k], optional[k], f"{path}.{k}", optional)
    elif schema is float:
        check(isinstance(value, (int, float)) and not isinstance(value, bool), f"{path} is a number")
    else:
        ok = isinstance(value, schema) and not (schema is int and isinstance(value, bool))
        check(ok, f"{path} is {schema.__name__}")
