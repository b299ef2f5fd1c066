import { readFileSync } from 'node:fs';

/**
 * A projection of cluster throughput from (p)'s measured per-turn costs (bench/README.md, ADR 0046): turns per
 * second for 1, 2, 4 and 8 gateways on one PostgreSQL of `BENCH_PROJECTION_DB_CORES` cores (8), each gateway
 * on cores of its own, fresh sessions, waited turns.
 *
 * Usage: `node dist/bench/projection.js <bench.json>`, the JSON of a run with `BENCH_SCENARIOS=p` on PostgreSQL
 * (its single-gateway rates and its cluster comparison). Every input is a figure of that file; the model:
 * - a gateway is bounded by its main thread (Node runs the turn path on one): `UTIL_MAIN` of a core ÷ its main
 *   thread's ms per turn at the highest rate measured, plus, per turn of the others, what a peer costs it (two
 *   gateways ÷ one at the same load per gateway, the excess over one, counted per peer);
 * - the database by its cores: `UTIL_DB` of them ÷ PostgreSQL's CPU per turn at that rate (its whole CPU: every
 *   backend, the WAL writer, the checkpointer);
 * - the bus by one core (Redis runs commands on one thread): `UTIL_BUS` ÷ its CPU per turn, which grows with the
 *   peers each message goes to.
 * The cluster takes the least of the three; the bottleneck is the one that binds.
 */

const UTIL_MAIN = 0.75;
const UTIL_DB = 0.7;
const UTIL_BUS = 0.7;
const SIZES = [1, 2, 4, 8];

interface Figure {
  id: string;
  backend: string;
  value: number;
}

/** The inputs of the model, each from a figure (ms per turn unless named otherwise). */
export interface ProjectionInputs {
  /** The highest single-gateway rate measured, turns/s. */
  rate: number;
  /** One gateway's main thread at `rate`. */
  mainMs: number;
  /** PostgreSQL at `rate`. */
  dbMs: number;
  /** What one peer adds to a gateway's CPU per turn of the cluster (two ÷ one at the same load, the excess). */
  peerMs: number;
  /** The bus server with two gateways, per turn (one publish and one delivery of each message). */
  busMs: number;
  bus: string;
}

/** One row: the cluster's turns per second and what binds it. */
export interface ProjectionRow {
  gateways: number;
  gatewayBound: number;
  databaseBound: number;
  busBound: number;
  turnsPerS: number;
  bottleneck: 'gateways' | 'database' | 'bus';
}

/** The projection for `SIZES` gateways on a database of `dbCores` cores. */
export function project(inputs: ProjectionInputs, dbCores: number): ProjectionRow[] {
  return SIZES.map((gateways) => {
    // Per turn of the cluster, one gateway's main thread runs 1/N of the turns and hears of the rest.
    const perTurnOnOne = inputs.mainMs / gateways + (inputs.peerMs * (gateways - 1)) / gateways;
    const gatewayBound = (UTIL_MAIN * 1000) / perTurnOnOne;
    const databaseBound = (UTIL_DB * dbCores * 1000) / inputs.dbMs;
    // A message is published once and delivered to every peer: half of the two-gateway cost each.
    const busPerTurn = gateways === 1 ? 0 : (inputs.busMs / 2) * gateways;
    const busBound = busPerTurn === 0 ? Infinity : (UTIL_BUS * 1000) / busPerTurn;
    const turnsPerS = Math.min(gatewayBound, databaseBound, busBound);
    const bottleneck =
      turnsPerS === gatewayBound ? 'gateways' : turnsPerS === databaseBound ? 'database' : ('bus' as const);
    return { gateways, gatewayBound, databaseBound, busBound, turnsPerS, bottleneck };
  });
}

/** The model's inputs from a bench JSON's figures (PostgreSQL, (p)). */
export function inputsFrom(figures: Figure[], bus: 'redis' | 'nats'): ProjectionInputs {
  const pg = new Map(figures.filter((f) => f.backend === 'postgres').map((f) => [f.id, f.value]));
  const need = (id: string): number => {
    const value = pg.get(id);
    if (value === undefined || !Number.isFinite(value)) throw new Error(`the bench JSON has no figure ${id}`);
    return value;
  };
  const rates = [...pg.keys()]
    .map((id) => /^ordinary\.fresh\.r(\d+)\.main_thread_ms_per_turn$/.exec(id)?.[1])
    .filter((r): r is string => r !== undefined)
    .map(Number);
  if (rates.length === 0) throw new Error('the bench JSON has no (p) rates on PostgreSQL (BENCH_SCENARIOS=p)');
  const rate = Math.max(...rates);
  const clusterRates = [...pg.keys()]
    .map((id) => new RegExp(`^ordinary\\.cluster\\.${bus}\\.r(\\d+)\\.ratio_same_load$`).exec(id)?.[1])
    .filter((r): r is string => r !== undefined)
    .map(Number);
  if (clusterRates.length === 0) throw new Error(`the bench JSON has no cluster comparison over ${bus}`);
  const clusterRate = Math.max(...clusterRates);
  const half = need(`ordinary.cluster.${bus}.one_half.r${clusterRate / 2}.cpu_ms_per_turn`);
  const two = need(`ordinary.cluster.${bus}.two.r${clusterRate}.cpu_ms_per_turn`);
  return {
    rate,
    mainMs: need(`ordinary.fresh.r${rate}.main_thread_ms_per_turn`),
    dbMs: need(`ordinary.fresh.r${rate}.server.postgres_ms_per_turn`),
    peerMs: Math.max(0, two - half),
    busMs: need(
      `ordinary.cluster.${bus}.two.r${clusterRate}.server.${bus === 'redis' ? 'redis-server' : 'nats-server'}_ms_per_turn`,
    ),
    bus,
  };
}

function main(): void {
  const file = process.argv[2];
  if (!file) {
    console.error('usage: node dist/bench/projection.js <bench.json> (a run with BENCH_SCENARIOS=p on PostgreSQL)');
    process.exit(2);
  }
  const dbCores = Number(process.env.BENCH_PROJECTION_DB_CORES ?? 8);
  const { figures } = JSON.parse(readFileSync(file, 'utf8')) as { figures: Figure[] };
  for (const bus of ['redis', 'nats'] as const) {
    let inputs: ProjectionInputs;
    try {
      inputs = inputsFrom(figures, bus);
    } catch (err) {
      console.log(`${bus}: ${(err as Error).message}`);
      continue;
    }
    const f = (n: number, digits = 2) => (Number.isFinite(n) ? n.toFixed(digits) : '—');
    console.log(
      `\n${bus}: from ${file} — main thread ${f(inputs.mainMs)} ms/turn and PostgreSQL ${f(inputs.dbMs)} ms/turn at ` +
        `${inputs.rate} turns/s; a peer adds ${f(inputs.peerMs)} ms/turn; the bus ${f(inputs.busMs, 3)} ms/turn with two`,
    );
    console.log(`gateways  turns/s  gateway-bound  database-bound (${dbCores} cores)  bus-bound  bottleneck`);
    for (const row of project(inputs, dbCores)) {
      console.log(
        `${String(row.gateways).padStart(8)}  ${f(row.turnsPerS, 0).padStart(7)}  ${f(row.gatewayBound, 0).padStart(13)}  ` +
          `${f(row.databaseBound, 0).padStart(24)}  ${f(row.busBound, 0).padStart(9)}  ${row.bottleneck}`,
      );
    }
  }
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop()!)) main();
