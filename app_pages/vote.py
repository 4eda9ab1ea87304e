"""A student's phone: the room's current question and its choices, nothing else (``/vote?room=CODE``)."""

from ui import vote

vote.phone_screen()
