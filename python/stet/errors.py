"""The exception stet raises for a request it refuses.

A RequestError is a ValueError whose ``param`` names the field at fault, as the
server's 400 ``param`` does (the engine's ValidateRequest names it in both).
"""


class RequestError(ValueError):
    """A request, sampling parameter or conversation stet refuses.

    ``param`` is the field at fault (``"temperature"``, ``"stop_token_ids"``,
    ``"messages[1].role"``, ``"structured_outputs.json"``, ...); the message
    starts with it.
    """

    def __init__(self, message, param=None):
        super().__init__(message)
        self.param = param
