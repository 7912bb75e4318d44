"""Text that came from a submission, made safe to show in a terminal or a log.

A notebook decides its own grade ids, file names and exception messages; printed raw, an
escape sequence in one of them could retitle the instructor's terminal, erase the lines
before it or forge a log line. printable() shows every control character as an escape
(\\x1b, \\u202e) instead, and PrintableRecords does it to every record a logger handles.
"""
import logging
import re

# C0 controls, DEL, C1 controls, and the bidirectional overrides and isolates that reorder
# what a terminal shows.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: object, keep: str = "") -> str:
    """str(text) with every control character but those in `keep` written as its escape."""
    def escaped(match):
        char = match.group()
        return char if char in keep else repr(char)[1:-1] if ord(char) < 0x100 \
            else f"\\u{ord(char):04x}"
    return _CONTROL.sub(escaped, str(text))


class PrintableRecords(logging.Filter):
    """A logging filter that escapes the control characters of a record's message, its
    arguments and its traceback (line breaks and tabs stay: tracebacks keep their shape)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = printable(record.msg, keep="\n\t")
        if isinstance(record.args, dict):
            record.args = {k: _printable_value(v) for k, v in record.args.items()}
        elif record.args:
            record.args = tuple(_printable_value(v) for v in record.args)
        if record.exc_info and not record.exc_text:
            record.exc_text = printable(logging.Formatter().formatException(record.exc_info),
                                        keep="\n\t")
        return True


def _printable_value(value):
    """Numbers stay numbers (a %d needs one); anything else becomes its printable text."""
    return value if isinstance(value, (int, float)) else printable(value, keep="\n\t")
