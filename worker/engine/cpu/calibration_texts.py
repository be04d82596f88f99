"""The int8 quality gate's built-in calibration sample: a few dozen varied texts (queries,
keywords, prose of several domains, code, numbers, lists, other languages and scripts, one text
past 256 tokens), none taken from the standard-library corpus the benchmarks use. They set the
activation ranges of SmoothQuant (``int8.py``) and are encoded in fp32 and int8 by the gate."""

from __future__ import annotations

_LONG = (
    "The committee met on Tuesday to review the quarterly results, which showed revenue growth "
    "of 4.2 percent against a forecast of 3.5 percent, driven mainly by the services division. "
    "Operating costs rose faster than expected because of energy prices and a one-off payment "
    "related to the relocation of the northern warehouse. Members asked whether the growth was "
    "sustainable given the slowing order book, and the finance director replied that two large "
    "contracts signed in the last week of the quarter would be recognised over the next three "
    "years. The meeting also approved a revised travel policy, postponed the decision on the "
    "new headquarters until an independent survey of the site is complete, and agreed to hold "
    "an extraordinary session in November to discuss the pension scheme. Several members noted "
    "that the minutes of the previous meeting contained an error in the table of regional "
    "figures; the secretary will circulate a corrected version. Any other business included a "
    "proposal to sponsor the local marathon, a complaint about parking, and a reminder that "
    "nominations for the staff awards close at the end of the month. "
)

CALIBRATION_TEXTS: tuple[str, ...] = (
    "how do I reset my password",
    "best pizza near me open now",
    "symptoms of vitamin d deficiency",
    "python list comprehension with condition",
    "cheap flights paris to tokyo march",
    "solar panel efficiency",
    "Q3 earnings",
    "error: connection refused (port 6379)",
    "The mitochondrion is the site of oxidative phosphorylation, where the electron transport "
    "chain pumps protons across the inner membrane and ATP synthase uses the gradient to make "
    "ATP.",
    "Preheat the oven to 200°C. Whisk two eggs with 150 g of flour, a pinch of salt and 300 ml "
    "of milk, then rest the batter for thirty minutes before pouring it into the hot tin.",
    "The tenant shall not sublet the premises or any part thereof without the prior written "
    "consent of the landlord, such consent not to be unreasonably withheld or delayed.",
    "Striker scores twice in the final ten minutes as the visitors come back from two goals "
    "down to win the cup in front of a sold-out stadium.",
    "def merge(a, b):\n    out = []\n    while a and b:\n        out.append(a.pop(0) if a[0] < "
    "b[0] else b.pop(0))\n    return out + a + b",
    "SELECT customer_id, SUM(amount) FROM orders WHERE created_at >= '2024-01-01' GROUP BY "
    "customer_id HAVING SUM(amount) > 1000 ORDER BY 2 DESC;",
    '{"id": 42, "name": "sensor-7", "readings": [21.5, 21.7, 22.0], "unit": "celsius"}',
    "Invoice 2024-0193: 3 x widget @ $14.99, 1 x shipping @ $7.50, tax 8.25%, total $56.80.",
    "1. Unplug the router. 2. Wait thirty seconds. 3. Plug it back in. 4. Wait for the lights "
    "to turn green. 5. Try the connection again.",
    "Shall I compare thee to a summer's day? Thou art more lovely and more temperate.",
    "It was a bright cold day in April, and the clocks were striking thirteen.",
    "Der schnelle braune Fuchs springt über den faulen Hund, während die Katze schläft.",
    "La réunion est reportée à jeudi prochain à cause de la grève des transports publics.",
    "El museo abre de martes a domingo, de diez de la mañana a seis de la tarde.",
    "東京の天気は明日晴れるでしょう。週末は雨の予報です。",
    "Москва является столицей и крупнейшим городом России.",
    "مرحبا بكم في موقعنا الإلكتروني",
    "The patient, a 54-year-old male, presented with chest pain radiating to the left arm, "
    "diaphoresis and shortness of breath; ECG showed ST elevation in leads II, III and aVF.",
    "Interest rates were left unchanged at 5.25 percent, but two members of the board voted for "
    "a cut, citing weaker consumer spending and easing inflation.",
    "Photosynthesis converts light energy into chemical energy stored in glucose.",
    "To install, run pip install package-name, then import it in your script and call init() "
    "before any other function.",
    "WARNING!!! Do NOT open attachments from unknown senders... click here >>> http://example.",
    "ok",
    "yes no maybe",
    "#hashtag @mention :) <3 lol",
    "3.14159 2.71828 1.41421 1.61803 0.57721",
    "A B C D E F G H I J K L M N O P Q R S T U V W X Y Z",
    "the the the the the the the the the the the the the the the the",
    "Customer review: the headphones sound great and the battery lasts two days, but the ear "
    "cushions started to peel after a month, which is disappointing at this price.",
    "In 1969, Apollo 11 landed on the Moon; Neil Armstrong and Buzz Aldrin walked on the "
    "surface while Michael Collins orbited above in the command module.",
    "Gradient descent updates the parameters in the direction opposite to the gradient of the "
    "loss, scaled by a learning rate that may decay over time.",
    "Chapter 7: The Return. The ship came in at dawn, its sails torn, and the whole village ran "
    "down to the harbour to see who had survived the storm.",
    _LONG,
    _LONG * 2,  # past 256 tokens: truncated, as users' long texts are
)
