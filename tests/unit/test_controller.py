from speculator.controller import Controller


def test_no_draft_when_acceptance_is_poor() -> None:
    c = Controller()
    for _ in range(50):
        c.observe_acceptance("lookup:1", drafted=4, accepted=0)
    assert c.draft_length("lookup:1", 32) == 0


def test_long_drafts_when_everything_is_accepted() -> None:
    c = Controller()
    for _ in range(30):
        c.observe_acceptance("lookup:aligned", drafted=16, accepted=16)
    assert c.draft_length("lookup:aligned", 32) >= 16


def test_cheap_verification_favours_longer_drafts() -> None:
    flat = Controller(cost_ms={1: 10.0, 2: 10.5, 4: 11.0, 8: 12.0, 16: 14.0, 32: 18.0})
    steep = Controller()
    assert flat.draft_length("lookup:2", 32) > steep.draft_length("lookup:2", 32)


def test_measured_costs_rescale_every_batch_size() -> None:
    c = Controller()
    before = c.cost(33)
    for _ in range(40):
        c.observe_cost(1, c.cost_ms[1] / 2)
    assert c.cost(1) < 0.6 * 71
    assert c.cost(33) < 0.7 * before


def test_draft_never_longer_than_available() -> None:
    c = Controller()
    for _ in range(30):
        c.observe_acceptance("lookup:aligned", drafted=8, accepted=8)
    assert c.draft_length("lookup:aligned", 3) <= 3
