//! A small web of pages about distinct topics, each with a question a person might ask about
//! it in other words. Semantic search is judged on it: the question for a topic must find that
//! topic's page first. The questions share few words with their pages on purpose — a keyword
//! match is not enough.

use crate::web::Site;

/// One page of the topic web.
pub struct Topic {
    /// URL path segment: the page is `/t/<slug>`.
    pub slug: &'static str,
    pub title: &'static str,
    pub paragraphs: [&'static str; 3],
    /// A question about the page, phrased differently from it.
    pub question: &'static str,
}

/// Thirty pages on thirty unrelated subjects.
pub const TOPICS: &[Topic] = &[
    Topic {
        slug: "sourdough",
        title: "Baking sourdough bread",
        paragraphs: [
            "A sourdough loaf rises thanks to a starter, a culture of wild yeast and lactic acid bacteria kept alive with regular feedings of flour and water.",
            "Bakers mix the levain with flour, water and salt, fold the dough every half hour and let it ferment slowly before shaping it into a boule.",
            "Baked in a very hot Dutch oven, the crust turns dark and crackly while the crumb stays open and slightly tangy.",
        ],
        question: "how do I make naturally leavened bread with a wild yeast culture",
    },
    Topic {
        slug: "volcanoes",
        title: "How volcanoes erupt",
        paragraphs: [
            "Volcanoes form where molten rock from the mantle rises through cracks in the crust and collects in a magma chamber.",
            "When gas pressure in the magma grows too high, an eruption blasts ash, pumice and lava bombs into the sky.",
            "Shield volcanoes such as those of Hawaii pour out runny basalt lava in gentle flows rather than explosions.",
        ],
        question: "what makes a mountain spew lava and ash",
    },
    Topic {
        slug: "chess-openings",
        title: "Chess openings for beginners",
        paragraphs: [
            "The first moves of a chess game aim to control the centre squares, develop the knights and bishops and castle the king to safety.",
            "The Italian Game and the Ruy Lopez begin with the king's pawn, while the Queen's Gambit offers a pawn to gain central space.",
            "Beginners should avoid moving the queen out early and should not move the same piece twice in the opening.",
        ],
        question: "good first moves on the board for a novice player",
    },
    Topic {
        slug: "honeybees",
        title: "Life in a honeybee colony",
        paragraphs: [
            "A honeybee hive holds one queen, thousands of female worker bees and, in summer, a few hundred male drones.",
            "Workers forage for nectar and pollen, communicate the location of flowers with a waggle dance and turn nectar into honey.",
            "Beekeepers inspect the frames of the hive, watch for varroa mites and leave enough stores for the colony to survive winter.",
        ],
        question: "how do insects that make honey organise their nest",
    },
    Topic {
        slug: "black-holes",
        title: "Black holes explained",
        paragraphs: [
            "A black hole is a region of spacetime where gravity is so strong that nothing, not even light, can escape once it crosses the event horizon.",
            "Stellar black holes form when a massive star collapses at the end of its life; supermassive ones sit at the centres of galaxies.",
            "Astronomers detect them by the gravitational waves of their mergers and by the glowing disk of gas that spirals into them.",
        ],
        question: "what happens when a giant star collapses and traps light",
    },
    Topic {
        slug: "marathon",
        title: "Training for your first marathon",
        paragraphs: [
            "Preparing to run 42 kilometres takes about four months of gradually longer weekly long runs.",
            "Most plans mix easy jogging, tempo runs and one long run each week, with a taper in the final three weeks before race day.",
            "Runners practise drinking and eating energy gels during long runs so their stomach copes on the day.",
        ],
        question: "preparing my body for a 26 mile road race",
    },
    Topic {
        slug: "tax-returns",
        title: "Filing an income tax return",
        paragraphs: [
            "Each year, people declare their wages, interest and other earnings to the revenue office and work out what they owe.",
            "Deductions for pension contributions, charitable gifts and work expenses lower the taxable amount.",
            "Keeping payslips and receipts organised makes the annual declaration quicker and helps if the authority asks questions later.",
        ],
        question: "reporting my yearly earnings to the government and claiming deductions",
    },
    Topic {
        slug: "tomatoes",
        title: "Growing tomatoes in the garden",
        paragraphs: [
            "Tomato plants need full sun, rich soil and steady watering to produce a good crop of fruit.",
            "Gardeners pinch out the side shoots of cordon varieties and tie the main stem to a cane as it grows.",
            "Blossom end rot and blight are common problems; mulching and watering at the base of the plant help prevent them.",
        ],
        question: "caring for red fruit vines in my vegetable patch",
    },
    Topic {
        slug: "photosynthesis",
        title: "Photosynthesis",
        paragraphs: [
            "Plants capture the energy of sunlight with chlorophyll in their leaves.",
            "In the chloroplasts, that energy splits water and fixes carbon dioxide from the air into sugars, releasing oxygen as a by-product.",
            "The sugars feed the plant's growth and, through food chains, nearly every animal on Earth.",
        ],
        question: "how do green leaves turn sunshine into food",
    },
    Topic {
        slug: "rust-ownership",
        title: "Ownership and borrowing in Rust",
        paragraphs: [
            "In the Rust programming language every value has a single owner, and the value is dropped when its owner goes out of scope.",
            "References borrow a value without taking ownership; the compiler's borrow checker allows many shared references or one mutable reference at a time.",
            "These rules prevent data races and use-after-free bugs at compile time, without a garbage collector.",
        ],
        question: "how does this systems language manage memory safely without garbage collection",
    },
    Topic {
        slug: "coffee-brewing",
        title: "Brewing better coffee",
        paragraphs: [
            "Freshly ground beans and water just off the boil, around 94 degrees Celsius, make the biggest difference to a cup.",
            "A pour-over needs a medium grind and about three minutes of contact; a French press wants a coarse grind and four minutes.",
            "Espresso forces hot water through finely ground, tightly packed grounds in under thirty seconds.",
        ],
        question: "tips for making a tasty cup of java at home",
    },
    Topic {
        slug: "roman-empire",
        title: "The fall of the Western Roman Empire",
        paragraphs: [
            "By the fifth century the western half of Rome's empire was weakened by civil wars, debased coinage and overstretched frontiers.",
            "Germanic peoples such as the Visigoths and Vandals crossed the borders, and Rome itself was sacked in 410 and 455.",
            "Historians usually date the end to 476, when Odoacer deposed the last emperor, Romulus Augustulus.",
        ],
        question: "why did the ancient empire centred on Italy collapse",
    },
    Topic {
        slug: "solar-panels",
        title: "Solar panels on your roof",
        paragraphs: [
            "Photovoltaic cells made of silicon turn sunlight directly into direct current electricity.",
            "An inverter converts that current to the alternating current used by household appliances and the grid.",
            "A south-facing roof without shade gives the best yield, and a battery stores surplus power for the evening.",
        ],
        question: "generating household electricity from sunlight on the house",
    },
    Topic {
        slug: "sleep",
        title: "Why we need sleep",
        paragraphs: [
            "Adults need seven to nine hours of rest each night; during deep slow-wave stages the brain consolidates memories.",
            "Dreams mostly happen in rapid eye movement phases, which recur about every ninety minutes through the night.",
            "Too little rest harms attention, mood and the immune system, and caffeine late in the day delays falling asleep.",
        ],
        question: "what happens to the brain while we are unconscious at night",
    },
    Topic {
        slug: "guitar-chords",
        title: "Learning guitar chords",
        paragraphs: [
            "New guitarists usually start with open shapes such as C, G, D, E minor and A minor, which use unfretted strings.",
            "Pressing the strings just behind the frets with the fingertips gives a clean tone and less buzzing.",
            "Barre chords, where one finger presses all six strings, are harder but let a player move one shape up and down the neck.",
        ],
        question: "finger positions for strumming my first songs on a six string",
    },
    Topic {
        slug: "vaccines",
        title: "How vaccines work",
        paragraphs: [
            "A vaccine trains the immune system by showing it a harmless piece or weakened form of a pathogen.",
            "White blood cells learn to recognise the antigen and produce antibodies, and memory cells remember it for years.",
            "When the real virus or bacterium arrives later, the body fights it off quickly, often before any illness develops.",
        ],
        question: "how does an injection teach the body to resist infection",
    },
    Topic {
        slug: "kayaking",
        title: "Sea kayaking basics",
        paragraphs: [
            "Paddlers sit low in a narrow boat and propel it with a double-bladed paddle, rotating the torso rather than pulling with the arms.",
            "On the sea, tides, wind and swell matter more than on a lake, so trips are planned around the forecast.",
            "Learning to roll the boat upright after a capsize, or to re-enter from the water with a partner, is essential.",
        ],
        question: "paddling a small narrow boat along the coast safely",
    },
    Topic {
        slug: "inflation",
        title: "What causes inflation",
        paragraphs: [
            "Inflation is a general rise in prices that reduces what each unit of money can buy.",
            "It can come from demand outpacing supply, from rising costs of energy and wages, or from too much money chasing too few goods.",
            "Central banks raise interest rates to cool spending and bring the rate of price increases back towards their target.",
        ],
        question: "why does everything in the shops keep getting more expensive",
    },
    Topic {
        slug: "cats",
        title: "Understanding your cat",
        paragraphs: [
            "Domestic cats purr when content, knead soft surfaces with their paws and rub their cheeks on people to mark them with scent.",
            "A flicking tail or flattened ears signal irritation, and a slow blink is a sign of trust.",
            "Indoor cats need scratching posts, play that imitates hunting and a clean litter tray.",
        ],
        question: "what is my feline pet trying to tell me with its behaviour",
    },
    Topic {
        slug: "glaciers",
        title: "Glaciers and ice ages",
        paragraphs: [
            "A glacier is a river of ice that forms where more snow falls each winter than melts in summer, compacting over centuries.",
            "Moving slowly downhill, glaciers carve U-shaped valleys, fjords and leave moraines of rock behind.",
            "During the last ice age, sheets of ice covered much of North America and northern Europe.",
        ],
        question: "slow frozen rivers that shaped valleys in the cold past",
    },
    Topic {
        slug: "knitting",
        title: "Knitting for beginners",
        paragraphs: [
            "Knitting turns a single strand of yarn into fabric with two needles, using just two basic stitches: knit and purl.",
            "Beginners cast on a row of loops, practise a garter stitch scarf and learn to bind off at the end.",
            "Wool, cotton and acrylic yarns behave differently, and the needle size decides how tight the fabric will be.",
        ],
        question: "making a scarf from wool with two needles",
    },
    Topic {
        slug: "earthquakes",
        title: "Why earthquakes happen",
        paragraphs: [
            "The Earth's crust is broken into tectonic plates that grind past, under or away from each other.",
            "Stress builds along faults until the rock suddenly slips, sending seismic waves through the ground.",
            "Seismologists measure the magnitude of a quake, and buildings in risky zones are designed to sway without collapsing.",
        ],
        question: "what causes the ground to shake violently",
    },
    Topic {
        slug: "electric-cars",
        title: "Owning an electric car",
        paragraphs: [
            "Battery electric vehicles are charged from a wall box at home or from rapid chargers along motorways.",
            "A typical family model covers 300 to 400 kilometres on a full charge, less in cold weather.",
            "With few moving parts, they need little servicing, and regenerative braking returns energy to the battery.",
        ],
        question: "driving a vehicle that plugs in instead of using petrol",
    },
    Topic {
        slug: "origami",
        title: "The art of origami",
        paragraphs: [
            "Origami is the Japanese craft of folding a single square sheet of paper into a figure without cutting or gluing it.",
            "Valley folds and mountain folds combine into bases from which cranes, frogs and flowers are shaped.",
            "The traditional paper crane is a symbol of peace and long life.",
        ],
        question: "folding paper into animals like birds",
    },
    Topic {
        slug: "password-security",
        title: "Choosing strong passwords",
        paragraphs: [
            "A long passphrase of several random words is harder to guess than a short password with symbols.",
            "Reusing the same password on many websites means one breach exposes every account, so a password manager helps.",
            "Two-factor authentication adds a second check, such as a code from an app, when someone logs in.",
        ],
        question: "keeping my online accounts safe from hackers",
    },
    Topic {
        slug: "tides",
        title: "What causes the tides",
        paragraphs: [
            "The gravity of the Moon, and to a lesser degree the Sun, pulls on the oceans and raises two bulges of water on opposite sides of the Earth.",
            "As the planet turns, most coasts see two high waters and two low waters a day.",
            "Spring tides with the largest range come at new and full moon, when the Sun and Moon line up.",
        ],
        question: "why does the sea rise and fall twice a day",
    },
    Topic {
        slug: "wine-making",
        title: "How wine is made",
        paragraphs: [
            "Grapes are harvested when their sugar and acidity are balanced, then crushed to release the juice.",
            "Yeast ferments the sugar into alcohol; red wines ferment with the skins, which give colour and tannin.",
            "The wine is then aged in oak barrels or steel tanks before it is bottled.",
        ],
        question: "turning grapes from a vineyard into an alcoholic drink",
    },
    Topic {
        slug: "first-aid-burns",
        title: "First aid for burns",
        paragraphs: [
            "Cool a burn under cool running water for twenty minutes as soon as possible, and remove rings or watches near it.",
            "Cover it loosely with cling film or a clean plastic bag; do not apply butter, ice or creams.",
            "Seek medical help for large, deep or facial burns, and for any burn on a young child.",
        ],
        question: "what to do right away if someone scalds their skin",
    },
    Topic {
        slug: "bicycle-repair",
        title: "Fixing a flat bicycle tyre",
        paragraphs: [
            "To mend a puncture, remove the wheel, lever one side of the tyre off the rim and pull out the inner tube.",
            "Pump a little air in to find the hole, roughen the rubber, apply glue and press a patch over it.",
            "Check the inside of the tyre for the thorn or glass that caused it before refitting the tube and inflating.",
        ],
        question: "repairing a punctured tube on my bike",
    },
    Topic {
        slug: "northern-lights",
        title: "Seeing the northern lights",
        paragraphs: [
            "The aurora borealis appears when charged particles from the Sun strike gases high in the atmosphere near the poles.",
            "Oxygen glows green and red, nitrogen blue and purple, in curtains that ripple across the night sky.",
            "Northern Norway, Iceland and Finnish Lapland on clear, dark winter nights give the best chance of a display.",
        ],
        question: "where to watch colourful glowing curtains in the arctic sky",
    },
];

/// The topic web on `host`: `/` links every topic page at `/t/<slug>`.
pub fn topic_site(host: &str) -> Site {
    let mut index = String::from("<html><head><title>Topics</title></head><body><h1>Topics</h1><ul>");
    for t in TOPICS {
        index.push_str(&format!("<li><a href=\"/t/{}\">{}</a></li>", t.slug, t.title));
    }
    index.push_str("</ul></body></html>");
    let mut site = Site::new(host).html("/", &index);
    for t in TOPICS {
        site = site.html(&format!("/t/{}", t.slug), &topic_page(t));
    }
    site
}

/// The HTML of one topic page: an article with a title, its paragraphs and some navigation.
pub fn topic_page(t: &Topic) -> String {
    let body: String = t.paragraphs.iter().map(|p| format!("<p>{p}</p>")).collect();
    format!(
        "<!doctype html><html lang=\"en\"><head><title>{title}</title>\
         <meta name=\"description\" content=\"{first}\">\
         <meta name=\"author\" content=\"Topic Web Editors\">\
         <meta property=\"article:published_time\" content=\"2026-03-01T09:00:00Z\">\
         <meta property=\"article:modified_time\" content=\"2026-04-02 10:30:00\">\
         <link rel=\"canonical\" href=\"/t/{slug}\"></head><body>\
         <nav><a href=\"/\">All topics</a></nav>\
         <article><h1>{title}</h1>{body}</article>\
         <footer>Topic web, a test site of Weft.</footer></body></html>",
        title = t.title,
        first = t.paragraphs[0],
        slug = t.slug,
    )
}
