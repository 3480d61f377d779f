"""Headers: the ordered, multi-valued, case-insensitive field list of a request."""

from __future__ import annotations

# typing is not imported at run time: the library's import must stay cheap (cold start).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator


class Headers:
    """The fields of a request as ``(name, value)`` pairs, in the order they arrived.

    Names are lower-case (HTTP field names are case-insensitive, RFC 9110 §5.1, and the
    watchdog may change their case, PROTOCOL.md §4.2); a field sent on several lines has
    one pair per line, so repeated fields such as ``Accept-Language`` keep every value in
    order. Lookups ignore case::

        req.headers["content-type"]          # the first value; KeyError when absent
        req.headers.get("X-Token")           # the first value, or None
        req.headers.get_all("accept-language")  # every value, in order
        for name, value in req.headers: ...
    """

    __slots__ = ("_pairs",)

    def __init__(self, pairs: list[tuple[str, str]] | None = None) -> None:
        self._pairs = pairs if pairs is not None else []

    def get(self, name: str, default: str | None = None) -> str | None:
        """The first value of ``name``, or ``default``."""
        name = name.lower()
        for n, v in self._pairs:
            if n == name:
                return v
        return default

    def get_all(self, name: str) -> list[str]:
        """Every value of ``name``, in order; empty when absent."""
        name = name.lower()
        return [v for n, v in self._pairs if n == name]

    def __getitem__(self, name: str) -> str:
        value = self.get(name)
        if value is None:
            raise KeyError(name)
        return value

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self._pairs)

    def __len__(self) -> int:
        return len(self._pairs)

    def items(self) -> list[tuple[str, str]]:
        """A copy of the ``(name, value)`` pairs."""
        return list(self._pairs)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Headers) and self._pairs == other._pairs

    def __repr__(self) -> str:
        return f"Headers({self._pairs!r})"
