//! Near-duplicate detection: 64-bit SimHash over word 3-gram shingles, looked up through
//! pigeonhole block tables.
//!
//! Two pages whose fingerprints differ in at most 3 bits are near duplicates (the same article
//! under two URLs, a print view, a page that differs by a date). Split a 64-bit fingerprint
//! into 4 blocks of 16 bits: 3 differing bits can touch at most 3 blocks, so any match within
//! 3 bits agrees *exactly* on at least one block. The store keeps one table per block position
//! (block value → documents), and a lookup reads 4 small buckets instead of scanning every
//! fingerprint. The tables themselves live in [`crate::store`]; this file is the pure part.

use unicode_segmentation::UnicodeSegmentation;

/// Fewer shingles than this and the text is too short to call anything its duplicate (a
/// "Loading…" shell or a one-line error page would otherwise alias every other one).
pub const MIN_SHINGLES: usize = 8;

/// Blocks a fingerprint is split into: distance ≤ BLOCKS - 1 is guaranteed to share a block.
pub const BLOCKS: usize = 4;

/// The fingerprint of `text`, or `None` when it is too short to deduplicate.
pub fn simhash(text: &str) -> Option<u64> {
    let words: Vec<String> = text.unicode_words().map(str::to_lowercase).collect();
    if words.len() < MIN_SHINGLES + 2 {
        return None;
    }
    let shingles: Vec<String> = words.windows(3).map(|w| w.join(" ")).collect();
    Some(simhash::simhash_stream(shingles.iter().map(String::as_str)))
}

/// The 16-bit blocks of a fingerprint, most significant first.
pub fn blocks(hash: u64) -> [u16; BLOCKS] {
    [(hash >> 48) as u16, (hash >> 32) as u16, (hash >> 16) as u16, hash as u16]
}

/// Differing bits.
pub fn distance(a: u64, b: u64) -> u32 {
    (a ^ b).count_ones()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A news item of about 250 words. Near-duplicate detection is for pages: each bit of the
    /// fingerprint is a vote of all shingles, so one edited word (3 shingles of ~250) flips a
    /// few bits here (measured 0–6 over 22 positions), fewer on longer pages.
    const ARTICLE: &str = "The city council approved the new budget on Tuesday after a long debate about \
        funding for parks, libraries and public transport. The mayor said the plan balances growth \
        with care for existing neighbourhoods, while critics argued that the bus network still lacks \
        money for evening service. A final vote on the transport levy is expected next month. \
        Council members spent most of the afternoon on the parks budget, which grows by four percent \
        to pay for new playgrounds in the northern districts and for the repair of the old bandstand \
        in the central gardens. Library opening hours will be extended on Saturdays, and two branches \
        that closed during the pandemic are to reopen in the spring with a smaller staff. The finance \
        committee warned that rising energy prices could eat into the reserves, and asked departments \
        to report their heating costs every quarter. Residents who spoke during the public comment \
        period were mostly concerned with road repairs, street lighting and the speed of buses on the \
        ring road, which several described as unreliable after eight in the evening. The transport \
        director promised a review of the timetable before the summer and said that new electric buses \
        would arrive in the autumn, although delivery dates depend on the manufacturer. The opposition \
        leader welcomed the library plan but called the transport levy a tax on commuters who have no \
        other way to reach their jobs, and said her group would table an amendment to cap it. The \
        budget now goes to the regional authority, which has six weeks to raise objections.";

    #[test]
    fn identical_and_lightly_edited_texts_are_near() {
        let a = simhash(ARTICLE).unwrap();
        assert_eq!(simhash(ARTICLE), Some(a));
        let edited = ARTICLE.replace("next month", "next week");
        let b = simhash(&edited).unwrap();
        assert!(distance(a, b) <= 6, "{}", distance(a, b));
        // The same article with a different first line (a date, a byline) is within 3 bits.
        let dated = format!("Published on 3 March. {ARTICLE}");
        let d = simhash(&dated).unwrap();
        assert!(distance(a, d) <= 3, "{}", distance(a, d));
        // Case and punctuation do not matter.
        let c = simhash(&ARTICLE.to_uppercase().replace(',', "")).unwrap();
        assert_eq!(a, c);
    }

    #[test]
    fn different_texts_are_far() {
        let a = simhash(ARTICLE).unwrap();
        let other = "Volcanoes form where magma rises through the crust. Some erupt explosively, others \
            pour out lava slowly over many years, building wide shield volcanoes like those of Hawaii.";
        let b = simhash(other).unwrap();
        assert!(distance(a, b) > 10, "{}", distance(a, b));
    }

    #[test]
    fn short_texts_are_not_fingerprinted() {
        assert_eq!(simhash(""), None);
        assert_eq!(simhash("Loading, please wait"), None);
    }

    #[test]
    fn pigeonhole_three_bits_share_a_block() {
        let h = 0x0123_4567_89ab_cdefu64;
        for (i, j, k) in [(0, 17, 40), (1, 2, 3), (15, 31, 47), (63, 48, 20)] {
            let g = h ^ (1 << i) ^ (1 << j) ^ (1 << k);
            let shared = blocks(h).iter().zip(blocks(g)).filter(|(a, b)| **a == *b).count();
            assert!(shared >= 1);
        }
    }
}
