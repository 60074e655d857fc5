#!/bin/sh
# A tiny reference peer (docs/json-schema.md): prints one record per line. --behave picks a
# misbehaviour so the harness's side of the contract can be tested.
behave=ok; name=peer/tiny
for a in "$@"; do
  case "$a" in
    --behave=*) behave=${a#--behave=} ;;
    --name=*) name=${a#--name=} ;;
  esac
done
case "$behave" in
  ok)
    echo "{\"name\":\"$name\",\"ops\":1000,\"bytes\":64000,\"wall_s\":0.5,\"integrity\":{\"sent\":1000,\"received\":1000,\"lost\":0,\"duplicated\":0,\"corrupt\":0},\"latency_ns\":{\"kind\":\"rtt\",\"count\":3,\"p50\":2000,\"histogram\":{\"values\":[1000,2000,3000],\"counts\":[1,1,1]}},\"extra\":{\"runtime\":\"sh\"},\"future_field\":true}" ;;
  hang) sleep 30 ;;
  garbage) echo "this is not json" ;;
  fail) echo "peer: cannot do that" >&2; exit 3 ;;
  crash) kill -SEGV $$ ;;
esac
