# Fixture: the handler of AWS's "Using the Lambda context object to retrieve Python
# function information" page (docs.aws.amazon.com/lambda/latest/dg/python-context.html,
# sample code under MIT-0), unchanged: it prints the context and returns None, which a
# function URL answers as the JSON body null.
import time

def lambda_handler(event, context):
    print("Lambda function ARN:", context.invoked_function_arn)
    print("CloudWatch log stream name:", context.log_stream_name)
    print("CloudWatch log group name:",  context.log_group_name)
    print("Lambda Request ID:", context.aws_request_id)
    print("Lambda function memory limits in MB:", context.memory_limit_in_mb)
    # We have added a 1 second delay so you can see the time remaining in get_remaining_time_in_millis.
    time.sleep(1)
    print("Lambda time remaining in MS:", context.get_remaining_time_in_millis())
