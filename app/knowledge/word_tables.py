"""Word tables per language for checking cited sentences: stop words, number words, and what is not a claim.

One table per language (English, Italian, French, Spanish, German); a contributor adds a language by adding
its entry to each table (tests/knowledge/test_word_tables.py checks that every language has all of them).
Words are lower case and compared after Unicode normalisation (NFKC) with typographic apostrophes made
straight.
"""

from __future__ import annotations

LANGUAGES = ("en", "it", "fr", "es", "de")

STOP_WORDS: dict[str, frozenset[str]] = {
    "en": frozenset("""
        a about above after again against all also always an and any are aren't as at be because been before
        being below between both but by can can't cannot could did didn't do does doesn't doing done don't down
        during each either else even ever every few for from further get gets got had has hasn't have haven't
        having he her here hers herself him himself his how however i if in into is isn't it it's its itself
        just least less let like made make makes many may me might more most much must my myself neither never
        no nor not now of off often on once one only onto or other others otherwise our ours ourselves out over
        own per rather same see seen several shall she should so some such than that that's the their theirs
        them themselves then there these they this those though through thus to too under until up upon us
        use used uses using very via was wasn't we were weren't what when where whether which while who whom
        whose why will with within without would yes yet you your yours yourself yourselves
        """.split()),
    "it": frozenset("""
        a ad agli ai al alla alle allo anche ancora che chi ci come con cosa cui da dagli dai dal dalla dalle
        dallo degli dei del della delle dello di dove e è ed era essere fa gli ha hanno i il in io la le lei
        lo loro lui ma mai mi ne negli nei nel nella nelle nello no noi non o ogni per perché più può quale
        quando quanto quella quelle quello questa queste questo se sempre senza si sia sono su sua sue sui
        sul sulla sulle suo suoi tra tutte tutti tutto un una uno vi viene vengono essere stato stata
        l dell all dall nell sull
        """.split()),
    "fr": frozenset("""
        à au aux avec ce ces cette comme dans de des du elle elles en est et été être il ils je la le les
        leur leurs lui mais me même mes moi ne ni nos notre nous on ou où par pas peut peuvent plus pour
        qu que qui sa sans se ses si son sont sur ta te tes toi ton tous tout toute toutes tu un une vos
        votre vous y jamais aussi chaque fois l d j qu n s c
        """.split()),
    "es": frozenset("""
        a al algo algunos ante antes como con contra cual cuando de del desde donde durante e el él ella
        ellas ellos en entre era es esa ese eso esta este esto estos están fue ha han hasta la las le les lo
        los más me mi mientras muy nada ni no nos o otra otro para pero poco por porque puede pueden que qué
        se sea según ser si sí sin sobre son su sus también tan te todo todos tu un una uno unos y ya cada
        nunca siempre
        """.split()),
    "de": frozenset("""
        aber alle allem allen aller alles als also am an auch auf aus bei bin bis bist da damit dann das
        dass dein deine dem den der des dich die dies diese diesem diesen dieser dieses dir doch du durch
        ein eine einem einen einer eines er es für hat hatte hier ich ihm ihn ihr ihre im in ist ja jede
        jeder jedes kann kein keine man mich mir mit muss nach nicht noch nur ob oder ohne sich sie sind so
        über um und uns unter vom von vor war was weil wenn werden wie wir wird wo zu zum zur zwischen nie
        immer wieder jeweils
        """.split()),
}

# Written-out numbers, so that "five" in a sentence matches "5" in a passage and the reverse.
NUMBER_WORDS: dict[str, dict[str, str]] = {
    "en": dict(zip(("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
                    "fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty hundred").split(),
                   [*map(str, range(21)), "30", "40", "50", "100"], strict=True)),
    "it": dict(zip(("zero uno due tre quattro cinque sei sette otto nove dieci undici dodici tredici quattordici "
                    "quindici sedici diciassette diciotto diciannove venti trenta quaranta cinquanta cento").split(),
                   [*map(str, range(21)), "30", "40", "50", "100"], strict=True)),
    "fr": dict(zip(("zéro un deux trois quatre cinq six sept huit neuf dix onze douze treize quatorze quinze "
                    "seize dix-sept dix-huit dix-neuf vingt trente quarante cinquante cent").split(),
                   [*map(str, range(21)), "30", "40", "50", "100"], strict=True)),
    "es": dict(zip(("cero uno dos tres cuatro cinco seis siete ocho nueve diez once doce trece catorce quince "
                    "dieciséis diecisiete dieciocho diecinueve veinte treinta cuarenta cincuenta cien").split(),
                   [*map(str, range(21)), "30", "40", "50", "100"], strict=True)),
    "de": dict(zip(("null eins zwei drei vier fünf sechs sieben acht neun zehn elf zwölf dreizehn vierzehn "
                    "fünfzehn sechzehn siebzehn achtzehn neunzehn zwanzig dreißig vierzig fünfzig hundert").split(),
                   [*map(str, range(21)), "30", "40", "50", "100"], strict=True)),
}
# Articles that double as "one" ("un", "uno", "eins" as "a") would make every sentence carry a number.
NOT_NUMBERS = frozenset({"one", "uno", "un", "una", "une"})

# Capitalised nouns are names in English, Italian, French and Spanish; German capitalises every noun.
CAPITALISES_NOUNS = frozenset({"de"})

# A short sentence (eight words at most) that opens with one of these is a greeting, a courtesy or a pointer
# ("See [2] for the details."), not a claim.
GREETINGS: dict[str, tuple[str, ...]] = {
    "en": ("hi", "hello", "hey", "thanks", "thank you", "you're welcome", "sure", "of course", "certainly",
           "happy to help", "glad to help", "great question", "good question", "i hope this helps",
           "hope this helps", "let me know", "feel free", "here is", "here's", "here are", "in short",
           "to sum up", "in summary", "see ", "for details", "for more", "more on this", "read more"),
    "it": ("ciao", "salve", "grazie", "prego", "certo", "volentieri", "ecco", "spero che", "fammi sapere",
           "in breve", "in sintesi", "vedi ", "per i dettagli", "per saperne di più"),
    "fr": ("bonjour", "salut", "merci", "bien sûr", "avec plaisir", "voici", "j'espère que", "n'hésitez pas",
           "en bref", "en résumé", "voir ", "pour plus de détails", "pour en savoir plus"),
    "es": ("hola", "gracias", "claro", "por supuesto", "con gusto", "aquí tienes", "aquí está", "espero que",
           "no dudes", "en resumen", "véase", "ver ", "para más detalles"),
    "de": ("hallo", "guten tag", "danke", "gern", "gerne", "natürlich", "sicher", "hier ist", "hier sind",
           "ich hoffe", "kurz gesagt", "zusammengefasst", "siehe ", "mehr dazu", "details in"),
}

# Phrases of a sentence that is about the sources, not about the world: "the documents do not say …",
# "I could not find …". Such a sentence is honest, not a claim that needs a citation.
ABOUT_THE_SOURCES: dict[str, tuple[str, ...]] = {
    "en": ("the documents do not", "the documents don't", "the passages do not", "the passages don't",
           "the sources do not", "the sources don't", "the documentation does not", "the documentation doesn't",
           "the docs do not", "the docs don't", "do not mention", "does not mention", "don't mention",
           "doesn't mention", "do not say", "does not say", "don't say", "doesn't say", "could not find",
           "couldn't find", "did not find", "didn't find", "found no", "not in the documents", "no passage",
           "nothing in the documents", "the documents do not answer"),
    "it": ("i documenti non", "i passaggi non", "la documentazione non", "le fonti non", "non ho trovato",
           "non menzionano", "non dicono", "non dice", "nessun passaggio"),
    "fr": ("les documents ne", "les passages ne", "la documentation ne", "les sources ne",
           "je n'ai pas trouvé", "ne mentionnent pas", "ne disent pas", "ne dit pas", "aucun passage"),
    "es": ("los documentos no", "los pasajes no", "la documentación no", "las fuentes no", "no encontré",
           "no he encontrado", "no mencionan", "no dicen", "no dice", "ningún pasaje"),
    "de": ("die dokumente", "die passagen", "die dokumentation", "die quellen", "nicht gefunden",
           "keine passage", "erwähnen nicht", "sagen nicht", "sagt nicht"),
}
# German puts the negation late ("Die Dokumente sagen nichts über …"): its phrases above name the subject,
# and a sentence of that language is about the sources only when it also has one of these.
GERMAN_NEGATIONS = ("nicht", "nichts", "kein", "keine", "keinen")

# A sentence that refers to the user's question restates it ("You asked whether …"): not a claim.
ABOUT_THE_QUESTION: dict[str, tuple[str, ...]] = {
    "en": ("you asked", "you're asking", "you are asking", "your question", "you want to know",
           "you'd like to know", "you would like to know"),
    "it": ("hai chiesto", "mi chiedi", "la tua domanda", "vuoi sapere"),
    "fr": ("vous demandez", "tu demandes", "votre question", "ta question", "vous voulez savoir"),
    "es": ("preguntas", "preguntaste", "tu pregunta", "quieres saber"),
    "de": ("sie fragen", "du fragst", "ihre frage", "deine frage", "sie möchten wissen", "du möchtest wissen"),
}

# Words that turn a statement around: a sentence and the passage window it matches best must agree on
# whether they are negated ("Deleting a chat deletes its memories" against "does not delete").
NEGATIONS: dict[str, frozenset[str]] = {
    "en": frozenset("""not no never none nothing nobody cannot can't don't doesn't isn't aren't won't wasn't
        weren't hasn't haven't didn't shouldn't couldn't wouldn't without neither nor n't""".split()),
    "it": frozenset("non mai nessun nessuno nessuna niente nulla senza né".split()),
    "fr": frozenset("ne n' pas jamais aucun aucune rien personne sans ni".split()),
    "es": frozenset("no nunca ningún ninguno ninguna nada nadie sin ni".split()),
    "de": frozenset("nicht nie niemals kein keine keinen keiner nichts niemand ohne weder".split()),
}

# A sentence about the sources that goes on with one of these makes a claim after all ("The documents do not
# mention it, but backups are encrypted").
CONTRASTS: dict[str, tuple[str, ...]] = {
    "en": (" but ", "however", "although", " though", " yet "),
    "it": (" ma ", "però", "tuttavia", "sebbene"),
    "fr": (" mais ", "cependant", "pourtant", "bien que"),
    "es": (" pero ", "sin embargo", "aunque"),
    "de": (" aber ", "jedoch", "obwohl", "trotzdem"),
}

# The marker the answer review puts at the end of a statement no retrieved passage supports: plain text, so
# every transport shows it as it is and the chat can style it (CitationReview.marked gives its spans).
UNVERIFIED_MARK: dict[str, str] = {
    "en": "(unverified)",
    "it": "(non verificato)",
    "fr": "(non vérifié)",
    "es": "(no verificado)",
    "de": "(nicht belegt)",
}

# A sentence in the first person is about what the assistant did or will do ("I created the table
# Contacts."): the answer review of actions checks it against the turn's record, not the documents.
FIRST_PERSON: dict[str, tuple[str, ...]] = {
    "en": ("i ", "i'", "we ", "we'", "let me ", "my ", "our "),
    "it": ("ho ", "abbiamo ", "io ", "sono stato ", "sono stata ", "ti ho ", "vi ho "),
    "fr": ("j'", "je ", "nous avons ", "nous "),
    "es": ("he ", "hemos ", "yo ", "te he "),
    "de": ("ich ", "wir ", "habe ich ", "haben wir "),
}
# …except a first-person hedge, which still states something about the world ("I think they are encrypted.").
HEDGES: dict[str, tuple[str, ...]] = {
    "en": ("i think", "i believe", "i guess", "i suppose", "i assume", "i expect", "i know", "i'm sure",
           "i am sure", "i'm confident", "i am confident", "i'd say", "i would say", "i feel", "i recall",
           "i remember", "we think", "we believe", "we know", "my understanding", "as far as i know"),
    "it": ("penso", "credo", "suppongo", "immagino", "sono sicuro", "sono sicura", "so che", "ricordo"),
    "fr": ("je pense", "je crois", "je suppose", "j'imagine", "je suis sûr", "je suis sûre", "je sais"),
    "es": ("creo", "pienso", "supongo", "imagino", "estoy seguro", "estoy segura", "sé que", "recuerdo"),
    "de": ("ich glaube", "ich denke", "ich vermute", "ich nehme an", "ich bin sicher", "ich weiß"),
}
