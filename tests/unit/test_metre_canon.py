"""Canonical English stanzas, one foot each (public-domain texts), labelled by the public metre labeller with the
shipped constants: the dactylic ones were read as iambic or anapaestic when a stanza took its verses' own labels,
a verse that fits a dactylic and an anapaestic pattern alike counting for the anapaest."""

import pytest

from poeval.poetry.metre import metre

CANON = {
    "iambic": [
        ["The curfew tolls the knell of parting day,", "The lowing herd wind slowly o'er the lea,",   # Gray
         "The ploughman homeward plods his weary way,", "And leaves the world to darkness and to me."],
        ["Shall I compare thee to a summer's day?", "Thou art more lovely and more temperate:",   # Shakespeare
         "Rough winds do shake the darling buds of May,", "And summer's lease hath all too short a date:"],
    ],
    "trochaic": [
        ["By the shores of Gitche Gumee,", "By the shining Big-Sea-Water,",   # Longfellow, Hiawatha
         "Stood the wigwam of Nokomis,", "Daughter of the Moon, Nokomis."],
        ["Should you ask me, whence these stories?", "Whence these legends and traditions,",
         "With the odours of the forest,", "With the dew and damp of meadows,"],
    ],
    "anapaestic": [
        ["The Assyrian came down like the wolf on the fold,",   # Byron, The Destruction of Sennacherib
         "And his cohorts were gleaming in purple and gold;",
         "And the sheen of their spears was like stars on the sea,",
         "When the blue wave rolls nightly on deep Galilee."],
        ["Like the leaves of the forest when Summer is green,", "That host with their banners at sunset were seen:",
         "Like the leaves of the forest when Autumn hath blown,", "That host on the morrow lay withered and strown."],
    ],
    "dactylic": [
        ["This is the forest primeval. The murmuring pines and the hemlocks,",   # Longfellow, Evangeline
         "Bearded with moss, and in garments green, indistinct in the twilight,",
         "Stand like Druids of eld, with voices sad and prophetic,",
         "Stand like harpers hoar, with beards that rest on their bosoms."],
        ["Half a league, half a league,", "Half a league onward,",   # Tennyson, The Charge of the Light Brigade
         "All in the valley of Death", "Rode the six hundred."],
        ["One more Unfortunate,", "Weary of breath,", "Rashly importunate,", "Gone to her death!"],   # Hood
    ],
    "amphibrachic": [
        ["O hush thee, my babie, thy sire was a knight,", "Thy mother a lady, both lovely and bright;",   # Scott
         "The woods and the glens, from the towers which we see,", "They all are belonging, dear babie, to thee."],
    ],
}


@pytest.mark.parametrize("family, stanza", [(f, s) for f, stanzas in CANON.items() for s in stanzas],
                         ids=[f"{f}-{i}" for f, stanzas in CANON.items() for i in range(len(stanzas))])
def test_a_canonical_stanza_takes_its_foot(family, stanza):
    assert metre(stanza, "en") == family
