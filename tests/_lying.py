"""Values that lie about themselves, for the bad-input tests of every encoder."""


class LyingList(list):
    """A list whose ``__len__`` says ``claimed`` whatever it holds."""

    def __init__(self, items, claimed):
        super().__init__(items)
        self.claimed = claimed

    def __len__(self):
        return self.claimed
