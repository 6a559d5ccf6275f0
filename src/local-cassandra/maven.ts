/**
 * Resolves one Maven Central artifact and its runtime closure into a git-ignored cache: the
 * launchers' single way to get jars (`cassandra-all` here, `kafka_2.13` for `local-kafka/`). The
 * first run calls Maven once (cold: minutes); every later run sees the `.complete` marker and
 * returns without touching Maven or the network.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** A Maven coordinate, e.g. `{ groupId: 'org.apache.kafka', artifactId: 'kafka_2.13', version: '4.1.1' }`. */
export interface MavenArtifact {
  groupId: string;
  artifactId: string;
  version: string;
}

export interface ResolveArtifactOptions {
  /** The artifact whose runtime closure is resolved. */
  artifact: MavenArtifact;
  /** Artifacts added to the same closure (a logging binding, say); Maven mediates the versions. */
  extra?: readonly MavenArtifact[];
  /** Root of the cache; the jars land in `<cacheDir>/<name>/lib`. */
  cacheDir: string;
  /** The cache entry's folder name; `<artifactId>-<version>` of `artifact` when absent. */
  name?: string;
  log?: (line: string) => void;
}

export interface ResolvedArtifact {
  /** Every jar of the runtime closure, flat: a classpath of `<libDir>/*`. */
  libDir: string;
  /** True when Maven ran in this call (a cold resolution). */
  resolvedNow: boolean;
}

export interface ResolveOptions {
  /** cassandra-all version, e.g. `5.0.8`. */
  version: string;
  /** Root of the cache; the jars land in `<cacheDir>/cassandra-<version>/lib`. */
  cacheDir: string;
  log?: (line: string) => void;
}

export interface ResolvedJars extends ResolvedArtifact {
  jammJar: string;
}

const DEPENDENCY_PLUGIN = 'org.apache.maven.plugins:maven-dependency-plugin:3.8.1';

function pom(artifacts: readonly MavenArtifact[], name: string): string {
  const deps = artifacts.map(
    (a) => `    <dependency>
      <groupId>${a.groupId}</groupId>
      <artifactId>${a.artifactId}</artifactId>
      <version>${a.version}</version>
    </dependency>
`,
  );
  return `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>flocklist.local</groupId>
  <artifactId>${name}-runtime</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
${deps.join('')}  </dependencies>
</project>
`;
}

function run(cmd: string, args: string[], cwd: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, stdio: ['ignore', 'inherit', 'inherit'] });
    child.on('error', (err) => reject(new Error(`cannot run ${cmd}: ${err.message} (is Maven installed?)`)));
    child.on('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`${cmd} ${args.join(' ')} exited with ${code}`)),
    );
  });
}

/**
 * Returns the jar directory of `artifact`'s runtime closure, resolving it through Maven only when
 * the cache entry is not complete (a resolution cut short leaves no marker and is redone whole).
 */
export async function resolveMavenArtifact(opts: ResolveArtifactOptions): Promise<ResolvedArtifact> {
  const { artifact } = opts;
  const name = opts.name ?? `${artifact.artifactId}-${artifact.version}`;
  const home = join(opts.cacheDir, name);
  const libDir = join(home, 'lib');
  const marker = join(home, '.complete');
  if (existsSync(marker)) return { libDir, resolvedNow: false };

  opts.log?.(
    `resolving ${artifact.groupId}:${artifact.artifactId}:${artifact.version} from Maven Central into ${libDir}`,
  );
  await rm(libDir, { recursive: true, force: true });
  await mkdir(home, { recursive: true });
  await writeFile(join(home, 'pom.xml'), pom([artifact, ...(opts.extra ?? [])], name));
  await run(
    'mvn',
    [
      '-q',
      '-B',
      `-DoutputDirectory=${libDir}`,
      '-DincludeScope=runtime',
      `${DEPENDENCY_PLUGIN}:copy-dependencies`,
    ],
    home,
  );
  await writeFile(marker, `${new Date().toISOString()}\n`);
  return { libDir, resolvedNow: true };
}

async function findJamm(libDir: string): Promise<string> {
  const jamm = (await readdir(libDir)).find((f) => /^jamm-[\d.]+\.jar$/.test(f));
  if (!jamm) throw new Error(`no jamm agent jar in ${libDir}`);
  return join(libDir, jamm);
}

/** `cassandra-all` through `resolveMavenArtifact`, in its historical cache folder, and its jamm agent. */
export async function resolveCassandraJars(opts: ResolveOptions): Promise<ResolvedJars> {
  const resolved = await resolveMavenArtifact({
    artifact: { groupId: 'org.apache.cassandra', artifactId: 'cassandra-all', version: opts.version },
    cacheDir: opts.cacheDir,
    name: `cassandra-${opts.version}`,
    ...(opts.log ? { log: opts.log } : {}),
  });
  return { ...resolved, jammJar: await findJamm(resolved.libDir) };
}
