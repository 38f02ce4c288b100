#!/usr/bin/env bash
# Sets everything up and runs the main job on loopback: a synthetic web of three sites plus a
# thirty-page topic web, a Weft node crawling and indexing it politely, `weft status` while it
# works, a graceful stop and a restart that resumes where it stopped, then searches by meaning
# through the node's API and, with the node stopped, straight from its data dir; then two nodes
# form a network (the second joins with --bootstrap) and share the crawl by the hash ring.
# No traffic leaves 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$HOME/.cargo/bin:$PATH"
cargo build --release --locked -q -p weft-node -p weft-simnet
bin=target/release
demo=$(mktemp -d -t weft-demo-XXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$demo"' EXIT

"$bin/weft-simnet" serve --hosts 3 --pages 40 --topics > "$demo/sites" &
for _ in $(seq 50); do [ -s "$demo/sites" ] && [ "$(wc -l < "$demo/sites")" -ge 4 ] && break; sleep 0.1; done
echo "== synthetic web on loopback:"; cat "$demo/sites"

{
  echo "data_dir = \"$demo/data\""
  echo "[crawl]"
  echo "seeds = [$(awk '{print "\"" $2 "\""}' "$demo/sites" | paste -sd, -)]"
  echo "[fetch]"
  echo "allow_private_networks = true   # the demo's sites live on 127.0.0.1"
  echo "[fetch.resolve]"
  awk '{print "\"" $1 "\" = \"127.0.0.1\""}' "$demo/sites"
  echo "[politeness]"
  echo "default_delay_ms = 150"
  echo "[api]"
  echo "listen = \"127.0.0.1:7790\""
  echo "[embed]   # the model files scripts/setup.sh installed"
  echo "model = \"$PWD/models/all-MiniLM-L6-v2-int8/model.onnx\""
  echo "tokenizer = \"$PWD/models/all-MiniLM-L6-v2-int8/tokenizer.json\""
  echo "ort_library = \"$PWD/models/onnxruntime-1.31.1/libonnxruntime.so\""
} > "$demo/weft.toml"
echo "== config check:"; "$bin/weft" config check "$demo/weft.toml"

echo "== crawling (stopping after 4 s to show a restart resumes)"
"$bin/weft" start --config "$demo/weft.toml" 2> "$demo/log1" &
node=$!
sleep 4
"$bin/weft" status --config "$demo/weft.toml"
kill -TERM $node; wait $node || true
echo "== restarted on the same data dir; it resumes with what was queued"
"$bin/weft" start --config "$demo/weft.toml" 2> "$demo/log2" &
node=$!
for _ in $(seq 120); do
  sleep 2
  json=$("$bin/weft" status --json --config "$demo/weft.toml" 2>/dev/null || true)
  echo "$json" | tr -d ' \n' | grep -o '"pages_fetched":[0-9]*,' | tr -d ',' || true
  if echo "$json" | grep -q '"state": "idle"'; then break; fi
done
echo "== final status of the restarted node:"
"$bin/weft" status --config "$demo/weft.toml"
for q in "how do green leaves turn sunshine into food" "keeping my online accounts safe from hackers"; do
  echo "== weft search \"$q\" -k 3   (through the running node's API)"
  "$bin/weft" search --config "$demo/weft.toml" -k 3 "$q"
done
kill -TERM $node; wait $node || true
q="why does the sea rise and fall twice a day"
echo "== weft search \"$q\" -k 3   (node stopped: read from the data dir)"
"$bin/weft" search --config "$demo/weft.toml" -k 3 "$q"
count() { grep -o 'pages_fetched=[0-9]*' "$1" | tail -1 | cut -d= -f2; }
first=$(count "$demo/log1"); second=$(count "$demo/log2")
echo "== pages fetched: $first before the stop + $second after the restart = $((first + second)) of the 151 pages of this web"
echo "   (the data dir kept the queue, the seen-set and the robots.txt cache: nothing was fetched twice)"

echo
echo "== a network of two nodes: B joins A with --bootstrap; each host is crawled by its owner on the ring"
member_config() { # name api-port p2p-port
  sed -e "s|^data_dir = .*|data_dir = \"$demo/$1\"|" -e "s|^listen = \"127.0.0.1:7790\"|listen = \"127.0.0.1:$2\"|" "$demo/weft.toml"
  echo "[p2p]"
  echo "listen = [\"/ip4/127.0.0.1/tcp/$3\"]"
  echo "heartbeat_secs = 1"
}
# A starts with no seeds; B is given them and, once it has heard the members, sends each to
# the member that owns its host (B's own included).
member_config a 7791 7801 | sed -e 's|^seeds = .*|seeds = []|' > "$demo/a.toml"
member_config b 7792 7802 > "$demo/b.toml"
"$bin/weft" start --config "$demo/a.toml" --p2p 2> "$demo/log-a" &
node_a=$!
boot=""
for _ in $(seq 100); do
  boot=$("$bin/weft" status --json --config "$demo/a.toml" 2>/dev/null \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["network"]["listen_addrs"][0])' 2>/dev/null || true)
  [ -n "$boot" ] && break; sleep 0.2
done
echo "   A listens at $boot"
"$bin/weft" start --config "$demo/b.toml" --bootstrap "$boot" 2> "$demo/log-b" &
node_b=$!
for _ in $(seq 60); do
  sleep 1
  idle=0
  for c in a b; do
    "$bin/weft" status --json --config "$demo/$c.toml" 2>/dev/null | python3 -c '
import json,sys
s=json.load(sys.stdin); n=s["network"]
sys.exit(0 if s["state"]=="idle" and len(n["members"])==2 and n["urls_waiting"]==0 and s["pages_fetched"]>0 else 1)' && idle=$((idle+1))
  done
  [ $idle -eq 2 ] && break
done
total=0
for c in a b; do
  echo "== node ${c^^}:"
  "$bin/weft" status --config "$demo/$c.toml" | grep -E "^(pages fetched|index |network|  peers|  listening)"
  "$bin/weft" status --json --config "$demo/$c.toml" | python3 -c '
import json,sys
n=json.load(sys.stdin)["network"]
print("  exchange     sent %d URLs to their owners, received %d" % (n["urls_sent"], n["urls_received"]))'
  pages=$("$bin/weft" status --json --config "$demo/$c.toml" | python3 -c 'import json,sys; print(json.load(sys.stdin)["pages_fetched"])')
  total=$((total + pages))
done
echo "== pages fetched by A and B together: $total of the 151 pages of this web"
q="filing my yearly income declaration"
echo "== weft search \"$q\" -k 1 on A and on B (each searches the hosts it crawled; network search is next)"
"$bin/weft" search --config "$demo/a.toml" -k 1 "$q" | head -2
"$bin/weft" search --config "$demo/b.toml" -k 1 "$q" | head -2
kill -TERM $node_a $node_b; wait $node_a $node_b || true
