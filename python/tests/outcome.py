"""The outcome of evaluating an expression with ``torch`` bound to a library: the value's type
name and ``repr``, or the exception's type name and message."""


def outcome(lib, expression):
    """``{"type": ..., "repr": ...}`` or ``{"raises": ..., "message": ...}``."""
    try:
        value = eval(expression, {"torch": lib})  # noqa: S307 - test expressions only
    except Exception as e:  # noqa: BLE001 - every exception is an outcome
        return {"raises": type(e).__name__, "message": str(e)}
    return {"type": type(value).__name__, "repr": repr(value)}
