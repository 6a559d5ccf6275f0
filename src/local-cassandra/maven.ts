/**
 * Resolves `org.apache.cassandra:cassandra-all` and its runtime closure from Maven Central into a
 * git-ignored cache. The first run calls Maven once (cold: minutes); every later run sees the
 * `.complete` marker and returns without touching Maven or the network.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface ResolveOptions {
  /** cassandra-all version, e.g. `5.0.8`. */
  version: string;
  /** Root of the cache; the jars land in `<cacheDir>/cassandra-<version>/lib`. */
  cacheDir: string;
  log?: (line: string) => void;
}

export interface ResolvedJars {
  libDir: string;
  jammJar: string;
  /** True when Maven ran in this call (a cold resolution). */
  resolvedNow: boolean;
}

const DEPENDENCY_PLUGIN = 'org.apache.maven.plugins:maven-dependency-plugin:3.8.1';

function pom(version: string): string {
  return `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>flocklist.local</groupId>
  <artifactId>cassandra-runtime</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.cassandra</groupId>
      <artifactId>cassandra-all</artifactId>
      <version>${version}</version>
    </dependency>
  </dependencies>
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

async function findJamm(libDir: string): Promise<string> {
  const jamm = (await readdir(libDir)).find((f) => /^jamm-[\d.]+\.jar$/.test(f));
  if (!jamm) throw new Error(`no jamm agent jar in ${libDir}`);
  return join(libDir, jamm);
}

/** Returns the jar directory, resolving it through Maven only when the cache is not complete. */
export async function resolveCassandraJars(opts: ResolveOptions): Promise<ResolvedJars> {
  const home = join(opts.cacheDir, `cassandra-${opts.version}`);
  const libDir = join(home, 'lib');
  const marker = join(home, '.complete');
  if (existsSync(marker)) return { libDir, jammJar: await findJamm(libDir), resolvedNow: false };

  opts.log?.(`resolving cassandra-all ${opts.version} from Maven Central into ${libDir}`);
  await rm(libDir, { recursive: true, force: true });
  await mkdir(home, { recursive: true });
  await writeFile(join(home, 'pom.xml'), pom(opts.version));
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
  const jammJar = await findJamm(libDir);
  await writeFile(marker, `${new Date().toISOString()}\n`);
  return { libDir, jammJar, resolvedNow: true };
}
