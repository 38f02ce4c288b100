//! What each member holds of the roster events in flight, compactly: an event not yet held by
//! every member online has a *slot*, and each member a bit per slot. Once every member online
//! holds it, its slot is freed and it counts as held by all (a member that comes later gets it
//! with the roster it pulls). A roster of 10,000 entries on each of 10,000 members would not fit;
//! a few hundred bits each do.

/// The events in flight and who holds them.
#[derive(Debug, Clone, Default)]
pub struct InFlight {
    /// The event in each slot.
    slots: Vec<Option<usize>>,
    /// Online members holding each slot's event.
    holders: Vec<usize>,
    /// Each member's bits, `words` of them.
    bits: Vec<Vec<u64>>,
    words: usize,
}

impl InFlight {
    pub fn new(members: usize) -> InFlight {
        InFlight { slots: Vec::new(), holders: Vec::new(), bits: vec![vec![0]; members], words: 1 }
    }

    /// A new event `id` in flight, held by no one yet: its slot.
    pub fn open(&mut self, id: usize) -> usize {
        let slot = match self.slots.iter().position(Option::is_none) {
            Some(s) => s,
            None => {
                self.slots.push(None);
                self.holders.push(0);
                self.slots.len() - 1
            }
        };
        self.slots[slot] = Some(id);
        self.holders[slot] = 0;
        if slot / 64 + 1 > self.words {
            self.words = slot / 64 + 1;
            for b in &mut self.bits {
                b.resize(self.words, 0);
            }
        }
        slot
    }

    /// The event in `slot`, if one is.
    pub fn event(&self, slot: usize) -> Option<usize> {
        self.slots.get(slot).copied().flatten()
    }

    /// Slots, free or not (a slot's number is below this).
    pub fn slots(&self) -> usize {
        self.slots.len()
    }

    /// Events in flight.
    pub fn in_flight(&self) -> usize {
        self.slots.iter().filter(|s| s.is_some()).count()
    }

    pub fn holds(&self, member: u32, slot: usize) -> bool {
        self.bits[member as usize][slot / 64] & (1 << (slot % 64)) != 0
    }

    /// `member` takes the event in `slot`: whether it did not hold it.
    pub fn take(&mut self, member: u32, slot: usize) -> bool {
        if self.holds(member, slot) || self.slots[slot].is_none() {
            return false;
        }
        self.bits[member as usize][slot / 64] |= 1 << (slot % 64);
        self.holders[slot] += 1;
        true
    }

    /// Frees `slot` if `online` members hold its event, and returns the event.
    pub fn settle(&mut self, slot: usize, online: usize) -> Option<usize> {
        let id = self.slots[slot]?;
        if self.holders[slot] < online {
            return None;
        }
        self.slots[slot] = None;
        let (w, bit) = (slot / 64, 1u64 << (slot % 64));
        for b in &mut self.bits {
            b[w] &= !bit;
        }
        Some(id)
    }

    /// Every slot settled against `online` (after members left).
    pub fn settle_all(&mut self, online: usize) {
        for s in 0..self.slots.len() {
            self.settle(s, online);
        }
    }

    /// `member` went offline: it holds nothing any more.
    pub fn forget(&mut self, member: u32) {
        for s in self.held_by(member) {
            self.holders[s] -= 1;
        }
        self.bits[member as usize].iter_mut().for_each(|w| *w = 0);
    }

    /// The slots `member` holds.
    pub fn held_by(&self, member: u32) -> Vec<usize> {
        (0..self.slots.len()).filter(|s| self.holds(member, *s)).collect()
    }

    /// The slots only `a` holds, and those only `b` holds.
    pub fn differ(&self, a: u32, b: u32) -> (Vec<usize>, Vec<usize>) {
        let (mut only_a, mut only_b) = (Vec::new(), Vec::new());
        let words = (self.slots.len() / 64 + 1).min(self.words);
        for w in 0..words {
            let (x, y) = (self.bits[a as usize][w], self.bits[b as usize][w]);
            let mut d = x ^ y;
            while d != 0 {
                let bit = d.trailing_zeros() as usize;
                d &= d - 1;
                if x & (1 << bit) != 0 {
                    only_a.push(w * 64 + bit);
                } else {
                    only_b.push(w * 64 + bit);
                }
            }
        }
        (only_a, only_b)
    }
}

#[cfg(test)]
mod tests {
    use super::InFlight;

    #[test]
    fn an_event_is_in_flight_until_every_member_online_holds_it() {
        let mut f = InFlight::new(4);
        let slots: Vec<usize> = (0..70).map(|id| f.open(id)).collect();
        assert_eq!((slots[0], slots[69], f.in_flight()), (0, 69, 70), "a second word of bits");
        assert!(f.take(0, 69) && !f.take(0, 69) && f.take(1, 3));
        assert_eq!(f.differ(0, 1), (vec![69], vec![3]));
        assert_eq!(f.settle(69, 2), None);
        f.take(1, 69);
        assert_eq!(f.settle(69, 2), Some(69));
        assert!(!f.holds(0, 69) && f.event(69).is_none());
        assert_eq!(f.open(70), 69, "a freed slot is taken again");
        // A member that goes offline holds nothing, and the rest may then settle.
        f.take(2, 3);
        f.forget(2);
        assert_eq!(f.held_by(2), Vec::<usize>::new());
        assert_eq!(f.settle(3, 1), Some(3));
    }
}
