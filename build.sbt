// tfhadoop JVM build. Java only (no Scala in our artifacts), so one jar serves Spark 3.5 (Scala 2.12)
// and Spark 4.x (Scala 2.13), and the Hadoop side keeps Java 8 bytecode.
ThisBuild / organization := "io.tfhadoop"
ThisBuild / version := "0.1.0"
ThisBuild / scalaVersion := "2.13.16"
ThisBuild / crossPaths := false
ThisBuild / autoScalaLibrary := false
ThisBuild / javacOptions ++= Seq("-encoding", "UTF-8", "-Xlint:unchecked")
ThisBuild / Test / parallelExecution := false

val hadoopVersion = "3.5.0" // the Hadoop client inside pyspark 4.3.0

// The embedded cluster launcher: MiniDFSCluster + MiniYARNCluster in one JVM. Not part of the user
// jar; `writeClusterClasspath` records its runtime classpath (and the client classpath that YARN
// containers and Skein use) for `tfhadoop cluster up`.
lazy val writeClusterClasspath = taskKey[File]("Write the embedded cluster's classpath files into jars/")

lazy val cluster = (project in file("yarn/cluster"))
  .settings(
    name := "tfhadoop-cluster",
    javacOptions ++= Seq("--release", "17"),
    libraryDependencies ++= Seq(
      "org.apache.hadoop" % "hadoop-client-minicluster" % hadoopVersion,
      "org.apache.hadoop" % "hadoop-client-api" % hadoopVersion,
      "org.apache.hadoop" % "hadoop-client-runtime" % hadoopVersion,
      "org.slf4j" % "slf4j-reload4j" % "1.7.36",
      "ch.qos.reload4j" % "reload4j" % "1.2.25",
      // MiniYARNCluster's constructor calls Hadoop's GenericTestUtils, which needs JUnit 5 on the classpath.
      "org.junit.jupiter" % "junit-jupiter-api" % "5.11.4",
      // The shaded minicluster leaves BouncyCastle out; the ResourceManager needs it.
      "org.bouncycastle" % "bcprov-jdk18on" % "1.82",
      "org.bouncycastle" % "bcpkix-jdk18on" % "1.82",
      // Skein's application master registers Hadoop's AmIpFilter, which the client jars lack.
      ("org.apache.hadoop" % "hadoop-yarn-server-web-proxy" % hadoopVersion).intransitive(),
    ),
    writeClusterClasspath := {
      val out = (ThisBuild / baseDirectory).value / "jars"
      IO.createDirectory(out)
      val own = (Compile / packageBin).value
      val cp = (Compile / fullClasspath).value.map(_.data).filter(_.getName.endsWith(".jar"))
      val client = cp.filter { f =>
        val n = f.getName
        n.startsWith("hadoop-client-api") || n.startsWith("hadoop-yarn-server-web-proxy") || n.startsWith("hadoop-client-runtime") ||
        n.startsWith("slf4j-") || n.startsWith("reload4j") || n.startsWith("commons-logging")
      }
      IO.write(out / "cluster-classpath.txt", (own +: cp).map(_.getAbsolutePath).mkString("\n") + "\n")
      IO.write(out / "client-classpath.txt", client.map(_.getAbsolutePath).mkString("\n") + "\n")
      out / "cluster-classpath.txt"
    },
  )

lazy val root = (project in file("."))
  .aggregate(cluster)
  .settings(name := "tfhadoop", publish / skip := true)
