# Sourced by the template A/B scripts after common.sh, which define `ab_round DB` (the measurements of one
# round into database DB). template_ab TEMPLATE: rounds alternate between the checkout's TEMPLATE ("new")
# and the file OLD ("old"), ROUNDS (default "new old new old"), each round on a fresh database (nothing
# skipped as measured before) and each measurement in its own process with its own cuBLAS; the checkout's
# template is restored at the end. GPU tests of TESTS first unless NO_TESTS.
template_ab() {
  local template=$1
  [ -z "$NO_TESTS" ] && gpu_tests
  cp "$template" "$WORK/new.cu.j2"
  cp "$OLD" "$WORK/old.cu.j2"
  trap "cp '$WORK/new.cu.j2' '$template'" EXIT
  for round in ${ROUNDS:-new old new old}; do
    cp "$WORK/$round.cu.j2" "$template"
    step "round: the $round template"
    ab_round "$WORK/$round-$RANDOM.sqlite"
  done
  step "done"
}
