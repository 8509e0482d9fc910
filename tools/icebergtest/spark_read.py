"""Reads an AeroStream Iceberg table with Spark through the built-in REST
catalog and prints a JSON object: the row count, the rows per
aerostream.partition (GROUP BY), and the distinct (partition, offset)
pairs.

usage: spark_read.py URI NAMESPACE TABLE

The iceberg-spark-runtime jar comes from ICEBERG_SPARK_JARS (a comma list
of paths); the catalog is given nothing but its URI.
"""

import json
import os
import sys

from pyspark.sql import SparkSession


def main():
    uri, namespace, name = sys.argv[1:4]
    spark = (
        SparkSession.builder.master("local[1]")
        .appName("aerostream-icebergtest")
        .config("spark.jars", os.environ["ICEBERG_SPARK_JARS"])
        .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
        .config("spark.sql.catalog.aero", "org.apache.iceberg.spark.SparkCatalog")
        .config("spark.sql.catalog.aero.type", "rest")
        .config("spark.sql.catalog.aero.uri", uri)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.driver.memory", "512m")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("WARN")
    ident = "aero.`%s`.`%s`" % (namespace, name)
    count = spark.sql("SELECT count(*) AS n FROM %s" % ident).collect()[0]["n"]
    groups = spark.sql(
        "SELECT aerostream.partition AS p, count(*) AS n FROM %s GROUP BY aerostream.partition ORDER BY p" % ident
    ).collect()
    distinct = spark.sql(
        "SELECT count(*) AS n FROM (SELECT DISTINCT aerostream.partition, aerostream.offset FROM %s)" % ident
    ).collect()[0]["n"]
    tables = [r["tableName"] for r in spark.sql("SHOW TABLES IN aero.`%s`" % namespace).collect()]
    json.dump(
        {"count": count, "by_partition": {str(r["p"]): r["n"] for r in groups}, "distinct": distinct, "tables": tables},
        sys.stdout,
    )
    spark.stop()


if __name__ == "__main__":
    main()
